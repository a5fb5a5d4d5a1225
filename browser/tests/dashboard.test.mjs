// The dashboard in a real browser against the real binary: the setup flow
// (a source, a Webhooks destination, switched on), the live debugger,
// signed deliveries and the delivery log, a dead delivery replayed, CSRF
// refusal, sign-out, and a phone-sized viewport.
// Screenshots of each main page are taken on every run; with
// UPDATE_SCREENSHOTS=1 they replace those in docs/screenshots/ (otherwise they
// go to a temporary directory, so a test run leaves the work tree clean).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startReceiver } from '../lib/receiver.mjs';
import { shot } from '../lib/screenshots.mjs';
import { startSluice } from '../lib/sluice.mjs';

const SECRET = 's3cret-for-the-browser-test';

let sluice;
let browser;
let receiver;
let context;
let page;
// Filled in as the flow goes.
const state = { writeKey: '', sourceId: '', destinationId: '', consoleErrors: [] };

before(async () => {
  receiver = await startReceiver(SECRET);
  sluice = await startSluice({
    // Short retries so that a failing receiver makes a dead delivery in seconds.
    SLUICE_DELIVERY__RETRY_WINDOW_SECS: '2',
    SLUICE_DELIVERY__BACKOFF_BASE_MS: '200',
    SLUICE_DELIVERY__BACKOFF_CAP_MS: '400',
    SLUICE_DELIVERY__TIMEOUT_MS: '2000',
  });
  browser = await launch();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  // Script errors and CSP violations (Chromium reports both on the console).
  page.on('console', (m) => { if (m.type() === 'error') state.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => state.consoleErrors.push(String(e)));
});

after(async () => {
  await browser?.close();
  await sluice?.stop();
  await receiver?.close();
});


async function signIn(p, token = sluice.token) {
  await p.goto(`${sluice.url}/signin`);
  await p.getByLabel('Admin token').fill(token);
  await p.getByRole('button', { name: 'Sign in with the admin token' }).click();
}

/** Reloads `url` until `selector` is on the page. */
async function until(p, url, selector, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await p.goto(url);
    if ((await p.locator(selector).count()) > 0) return;
    if (Date.now() > deadline) throw new Error(`${selector} never appeared on ${url}`);
    await p.waitForTimeout(300);
  }
}

async function track(body) {
  const res = await fetch(`${sluice.url}/v1/track`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${state.writeKey}:`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.text());
}

test('pages need a session: the root redirects to sign-in, which refuses a wrong token with the API message', async () => {
  const res = await page.goto(`${sluice.url}/`);
  assert.match(page.url(), /\/signin$/);
  assert.match(res.headers()['content-security-policy'], /script-src 'self'/);
  await signIn(page, 'not-the-admin-token');
  await page.getByText('invalid admin token').waitFor();
  await shot(page, 'signin');
  await signIn(page);
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  const cookie = (await context.cookies()).find((c) => c.name === 'sluice_session');
  assert.ok(cookie.httpOnly);
  assert.equal(cookie.sameSite, 'Strict');
});

test('setup flow: create a source, then a Webhooks destination with 2 URLs, headers and a secret, and switch it on', async () => {
  await page.getByRole('link', { name: 'Sources', exact: true }).click();
  await page.getByLabel('Name').fill('web');
  await page.getByRole('button', { name: 'Create source' }).click();
  await page.getByText('it is shown only once').waitFor();
  state.writeKey = (await page.locator('#write-key').textContent()).trim();
  assert.match(state.writeKey, /^[A-Za-z0-9]{32}$/);
  assert.ok(await page.getByRole('button', { name: 'Copy key' }).isVisible());
  await shot(page, 'source-created');
  // Afterwards the key is only hinted at.
  await page.getByRole('link', { name: 'web' }).first().click();
  state.sourceId = page.url().split('/').pop();
  assert.equal(await page.getByText(state.writeKey).count(), 0);

  await page.getByRole('link', { name: 'Catalog' }).click();
  await shot(page, 'catalog');
  await page.getByRole('link', { name: 'Set up Webhooks' }).click();
  await page.getByLabel('Name').fill('Order hooks');
  await page.getByLabel('web', { exact: true }).check();
  // A bad URL is refused next to its field, in the admin API's words.
  await page.getByLabel('URL 1', { exact: true }).fill('ftp://example.com/hook');
  await page.getByRole('button', { name: 'Save destination' }).click();
  await page.locator('#url0-error').waitFor();
  assert.match(
    await page.locator('#url0-error').textContent(),
    /^URL 1: must use the http or https protocol$/,
  );
  await shot(page, 'new-destination-error');

  await page.getByLabel('URL 1', { exact: true }).fill(`${receiver.url}/a`);
  await page.getByLabel('Headers for URL 1 (optional)').fill('X-Team: growth');
  await page.getByRole('button', { name: 'Add another URL' }).click();
  await page.getByLabel('URL 2', { exact: true }).fill(`${receiver.url}/b`);
  await page.getByLabel('Headers for URL 2 (optional)').fill('Authorization: Bearer t0ken');
  await page.getByLabel('Shared secret').fill(SECRET);
  await shot(page, 'new-destination');
  await page.getByRole('button', { name: 'Save destination' }).click();

  await page.waitForURL(/\/destinations\/dst_[A-Za-z0-9]+\?created=1$/);
  state.destinationId = new URL(page.url()).pathname.split('/').pop();
  assert.equal((await page.locator('#state').textContent()).trim(), 'Off');
  assert.equal((await page.locator('#secret-hint').textContent()).trim(), 's3cr…');
  assert.equal(await page.getByText(SECRET).count(), 0);
  assert.equal(await page.locator('ol.urls > li').count(), 2);
  await page.getByText('X-Team: growth').waitFor();
  await page.getByRole('button', { name: 'Switch on' }).click();
  await page.getByRole('button', { name: 'Switch off' }).waitFor();
  assert.equal((await page.locator('#state').textContent()).trim(), 'On');
  await shot(page, 'destination');

  const dest = await sluice.admin('GET', `/api/v1/destinations/${state.destinationId}`);
  assert.equal(dest.enabled, true);
  assert.deepEqual(dest.source_ids, [state.sourceId]);
  // The API and the page show a sensitive header only masked; the receiver
  // test below checks that the full value is what gets sent.
  assert.equal(dest.settings.urls[1].headers.Authorization, 'Bear…');
  assert.equal(await page.getByText('Bearer t0ken').count(), 0);
});

test('a call from a real client shows up in the live debugger without reloading', async () => {
  await page.getByRole('link', { name: 'Debugger' }).click();
  await page.waitForURL(`${sluice.url}/sources/${state.sourceId}/debugger`);
  await page.getByText('No calls yet').waitFor();
  await track({ userId: 'u1', event: 'Order Completed', messageId: 'msg-ok-1', properties: { total: 42 } });
  const item = page.locator('#events li', { hasText: 'Order Completed' });
  await item.waitFor({ timeout: 15_000 });
  await item.locator('summary').click();
  const json = JSON.parse(await item.locator('pre.json').textContent());
  assert.equal(json.messageId, 'msg-ok-1');
  assert.equal(json.properties.total, 42);
  assert.ok(json.receivedAt);
  await shot(page, 'debugger');
});

test('the signed delivery reaches both URLs with their headers and shows in the delivery log', async () => {
  const atA = await receiver.waitFor((r) => r.path === '/a' && r.json?.messageId === 'msg-ok-1');
  assert.ok(atA.signed, 'X-Signature is the HMAC-SHA1 of the body');
  assert.equal(atA.headers['x-team'], 'growth');
  assert.equal(atA.json.event, 'Order Completed');
  await until(
    page,
    `${sluice.url}/destinations/${state.destinationId}/deliveries?message_id=msg-ok-1`,
    '.pill.succeeded',
  );
  // Both URLs are tried in the same round: one attempt each.
  await page.getByText('Attempts (2)').click();
  const attempts = page.locator('table.attempts');
  await attempts.getByText(`${receiver.url}/a`).waitFor();
  await attempts.getByText(`${receiver.url}/b`).waitFor();
  assert.equal(await attempts.locator('.status.ok', { hasText: '200' }).count(), 2);
  const atB = await receiver.waitFor((r) => r.path === '/b' && r.json?.messageId === 'msg-ok-1');
  assert.ok(atB.signed);
  assert.equal(atB.headers.authorization, 'Bearer t0ken');
  assert.equal(await page.locator('figure.chart svg rect.s-ok').count() > 0, true);
});

test('a test event from the destination page goes through the pipeline, signed, and its result is shown', async () => {
  await page.goto(`${sluice.url}/destinations/${state.destinationId}`);
  await page.getByRole('button', { name: 'Send a test event' }).click();
  await page.getByText('Test event sent').waitFor();
  const marked = page.locator('li.delivery.marked');
  assert.equal(await marked.count(), 1);
  await marked.locator('.pill.succeeded').waitFor();
  const hit = await receiver.waitFor((r) => r.json?.event === 'Sluice Test Event');
  assert.ok(hit.signed);
});

test('editing a destination changes its headers and keeps the secret when its field is left empty', async () => {
  await page.goto(`${sluice.url}/destinations/${state.destinationId}`);
  await page.getByRole('link', { name: 'Edit settings' }).click();
  assert.equal(await page.getByLabel('Headers for URL 1 (optional)').inputValue(), 'X-Team: growth');
  assert.equal(await page.getByLabel('Shared secret', { exact: true }).inputValue(), '');
  await page.getByLabel('Headers for URL 1 (optional)').fill('X-Team: platform');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText('Settings saved.').waitFor();
  await page.getByText('X-Team: platform').waitFor();
  assert.equal((await page.locator('#secret-hint').textContent()).trim(), 's3cr…');
  await track({ userId: 'u1', event: 'After Edit', messageId: 'msg-edit-1' });
  const hit = await receiver.waitFor((r) => r.path === '/a' && r.json?.messageId === 'msg-edit-1');
  assert.ok(hit.signed, 'still signed with the kept secret');
  assert.equal(hit.headers['x-team'], 'platform');
});

test('a failing receiver makes a dead delivery; replay sends it again and it succeeds', async () => {
  receiver.state.failing = true;
  await track({ userId: 'u2', event: 'Payment Failed', messageId: 'msg-fail-1' });
  const log = `${sluice.url}/destinations/${state.destinationId}/deliveries`;
  await until(page, `${log}?state=dead&message_id=msg-fail-1`, '.pill.dead', 30_000);
  await page.getByText(/retry window of 2s exhausted/).first().waitFor();
  await shot(page, 'delivery-dead');

  receiver.state.failing = false;
  await page.getByRole('button', { name: /^Replay delivery/ }).click();
  await page.getByText('1 dead delivery replayed').waitFor();
  await until(page, `${log}?message_id=msg-fail-1`, '.pill.succeeded', 30_000);
  const ok = await receiver.waitFor((r) => r.json?.messageId === 'msg-fail-1' && !r.failed);
  assert.ok(ok.signed);
  await page.goto(log);
  await shot(page, 'delivery-log');
});

test('usage shows the day\'s calls per source as a chart and a table', async () => {
  await page.getByRole('link', { name: 'Usage' }).click();
  const today = new Date().toISOString().slice(0, 10);
  const row = page.locator('tbody tr', { hasText: today });
  const cells = await row.locator('td').allTextContents();
  // Three calls from the client and the test event.
  assert.deepEqual(cells, [today, '4', '4', '0', '0']);
  assert.ok(await page.locator('figure.chart svg').isVisible());
  await shot(page, 'usage');
  await page.getByRole('link', { name: 'Overview' }).click();
  await shot(page, 'overview');
});

test('a form posted from another site without the session\'s CSRF token is refused', async () => {
  receiver.state.pages.set('/evil', `<!doctype html><form method="post" action="${sluice.url}/sources">
    <input name="name" value="evil"></form><script>document.forms[0].submit()</script>`);
  const refused = page.waitForResponse((r) => r.url() === `${sluice.url}/sources`);
  await page.goto(`${receiver.url}/evil`);
  const res = await refused;
  assert.equal(res.status(), 403);
  await page.getByText('CSRF check failed').waitFor();
  // A forged token in our own page's form is refused too.
  await page.goto(`${sluice.url}/sources`);
  await page.locator('form[action="/sources"] input[name=csrf]').evaluate((el) => { el.value = 'forged'; });
  await page.getByLabel('Name').fill('forged');
  await page.getByRole('button', { name: 'Create source' }).click();
  await page.getByText('CSRF check failed').waitFor();
  const sources = await sluice.admin('GET', '/api/v1/sources');
  assert.deepEqual(sources.data.map((s) => s.name), ['web']);
});

test('the dashboard is usable 375 px wide: nothing scrolls sideways', async () => {
  const phone = await browser.newContext({ viewport: { width: 375, height: 812 } });
  const p = await phone.newPage();
  await signIn(p);
  await p.getByRole('heading', { name: 'Overview' }).waitFor();
  for (const path of [
    '/',
    '/sources',
    `/sources/${state.sourceId}/debugger`,
    `/destinations/${state.destinationId}`,
    `/destinations/${state.destinationId}/deliveries`,
    '/destinations/new',
    `/destinations/${state.destinationId}/edit`,
    '/usage',
  ]) {
    await p.goto(`${sluice.url}${path}`);
    const width = await p.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `${path} is ${width}px wide`);
  }
  await p.goto(`${sluice.url}/destinations/${state.destinationId}/deliveries`);
  // The chart's labels stay readable, and a URL is not squeezed into a
  // column a few characters wide.
  const labels = p.locator('figure.chart text.tick');
  for (let i = 0; i < await labels.count(); i += 1) {
    const label = labels.nth(i);
    if (!(await label.isVisible())) continue;
    const box = await label.boundingBox();
    assert.ok(box.height >= 9, `chart label ${i} is ${box.height}px tall`);
  }
  await p.locator('li.delivery details summary').first().click();
  const url = p.locator('table.attempts td.url code').first();
  const urlBox = await url.boundingBox();
  assert.ok(urlBox.width >= 150, `the URL column is ${urlBox.width}px wide`);
  assert.ok(await p.evaluate(() => document.documentElement.scrollWidth) <= 375);
  await shot(p, 'delivery-log-375');
  await phone.close();
});

test('sign-out ends the session, and its cookie no longer opens pages', async () => {
  const before = (await context.cookies()).find((c) => c.name === 'sluice_session');
  await page.goto(`${sluice.url}/sources`);
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/signin$/);
  await page.goto(`${sluice.url}/sources`);
  assert.match(page.url(), /\/signin\?next=%2Fsources$/);
  // Replaying the old cookie does not work either.
  const other = await browser.newContext();
  await other.addCookies([before]);
  const p = await other.newPage();
  await p.goto(`${sluice.url}/sources`);
  assert.match(p.url(), /\/signin/);
  await other.close();
});

test('no page raised a script error or a Content-Security-Policy violation', () => {
  // The 4xx pages the tests provoke on purpose (wrong token, invalid form,
  // CSRF refusal) are reported as failed loads; nothing else may be.
  const ours = state.consoleErrors.filter((e) => !/status of 4\d\d/.test(e));
  assert.deepEqual(ours, []);
});
