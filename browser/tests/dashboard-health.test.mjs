// Delivery health at a glance and the searches, in a real browser against
// real receivers: the Health page without JavaScript and from the keyboard,
// the debugger's search and pause, the delivery log's search by call and
// HTTP status.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startReceiver } from '../lib/receiver.mjs';
import { startSluice } from '../lib/sluice.mjs';

const SECRET = 's3cret-for-delivery-health';

let sluice;
let browser;
let good;
let bad;
let page;
const state = { writeKey: '', sourceId: '', okId: '', failingId: '' };

async function signIn(context) {
  const p = await context.newPage();
  await p.goto(`${sluice.url}/signin`);
  await p.getByLabel('Admin token').fill(sluice.token);
  await p.getByRole('button', { name: 'Sign in with the admin token' }).click();
  await p.getByRole('heading', { name: 'Overview' }).waitFor();
  return p;
}

before(async () => {
  good = await startReceiver(SECRET);
  bad = await startReceiver(SECRET);
  bad.state.failing = true;
  sluice = await startSluice({
    SLUICE_DELIVERY__HEALTH_FLUSH_MS: '200',
    SLUICE_DELIVERY__RETRY_WINDOW_SECS: '2',
    SLUICE_DELIVERY__BACKOFF_BASE_MS: '200',
    SLUICE_DELIVERY__BACKOFF_CAP_MS: '400',
  });
  const source = await sluice.admin('POST', '/api/v1/sources', { name: 'web' });
  state.writeKey = source.write_key;
  state.sourceId = source.id;
  const ok = await sluice.admin('POST', '/api/v1/destinations', {
    name: 'Warehouse', enabled: true, source_ids: [source.id],
    settings: { urls: [`${good.url}/hook`], sharedSecret: SECRET },
  });
  state.okId = ok.id;
  const failing = await sluice.admin('POST', '/api/v1/destinations', {
    name: 'Flaky CRM', enabled: true, source_ids: [source.id],
    settings: { urls: [`${bad.url}/hook`], sharedSecret: SECRET },
  });
  state.failingId = failing.id;
  await sluice.admin('PUT', `/api/v1/destinations/${ok.id}/filters`, {
    filters: [{ name: 'no pings', action: 'drop', when: { field: 'event', op: 'in', values: ['Ping'] } }],
  });
  browser = await launch();
  page = await signIn(await browser.newContext({ viewport: { width: 1280, height: 900 } }));
  await send('track', { userId: 'u-1', event: 'Bought', messageId: 'm-bought' });
  await send('track', { userId: 'u-2', event: 'Ping', messageId: 'm-ping' });
  await send('page', { anonymousId: 'anon-9', name: 'Pricing', messageId: 'm-page' });
  await send('identify', { userId: 'u-3', traits: { plan: 'pro' }, messageId: 'm-identify' });
});

after(async () => {
  await browser?.close();
  await sluice?.stop();
  await good?.close();
  await bad?.close();
});

async function send(kind, body) {
  const res = await fetch(`${sluice.url}/v1/${kind}`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${state.writeKey}:`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, await res.text());
}

/** Reloads `url` on `p` until `check(p)` holds. */
async function until(p, url, check, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await p.goto(url);
    if (await check(p)) return;
    if (Date.now() > deadline) throw new Error(`never true on ${url}`);
    await p.waitForTimeout(300);
  }
}

const cell = (p, id, col) => p.locator(`#health-summary tr[data-destination="${id}"] td`).nth(col).textContent();

/** WCAG contrast of the page's text and its controls' labels. */
function contrastCheck() {
  const lum = (c) => {
    const [r, g, b] = c.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const bg = getComputedStyle(e).backgroundColor;
      if (bg && !/rgba\(.*,\s*0\)$/.test(bg) && bg !== 'transparent') return bg;
    }
    return 'rgb(255, 255, 255)';
  };
  const bad = [];
  for (const el of document.querySelectorAll('main *')) {
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '');
    if (!own || el.closest('svg') || el.offsetParent === null) continue;
    const [a, b] = [lum(getComputedStyle(el).color), lum(background(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) bad.push(`${el.tagName}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}`);
  }
  const unlabeled = [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
    .filter((f) => f.labels.length === 0 && !f.getAttribute('aria-label'))
    .map((f) => f.name);
  return { bad, unlabeled };
}

test('the health page shows each destination\'s figures without JavaScript', async () => {
  const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 1280, height: 900 } });
  const p = await signIn(context);
  // Warehouse: 3 delivered (the Ping was filtered); Flaky CRM: 4 dead.
  await until(p, `${sluice.url}/delivery-health`, async (q) =>
    (await q.locator('#health-summary').count()) > 0
      && (await cell(q, state.okId, 1)).trim() === '3'
      && (await cell(q, state.failingId, 3)).trim() === '4');
  assert.equal((await cell(p, state.okId, 4)).trim(), '1', 'filtered');
  assert.equal((await cell(p, state.okId, 6)).trim(), '100.0 %');
  assert.equal((await cell(p, state.failingId, 6)).trim(), '0.0 %');
  assert.match(await cell(p, state.okId, 8), /\d+ ms/, 'p95');
  // One chart per destination, of the chosen window, with its numbers.
  assert.equal(await p.locator('section.health svg[role="img"]').count(), 2);
  assert.equal(await p.locator('section.health').first().locator('details tbody tr').count(), 24);
  await p.getByRole('link', { name: 'Last 7d' }).click();
  assert.equal(await p.locator('section.health').first().locator('details tbody tr').count(), 28);
  assert.equal(await p.locator('nav.windows a[aria-current="page"]').textContent(), 'Last 7d');
  await context.close();
});

test('the health page is reached and used from the keyboard, readable and narrow', async () => {
  await page.goto(`${sluice.url}/`);
  await page.getByRole('link', { name: 'Health', exact: true }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Delivery health' }).waitFor();
  await page.getByRole('link', { name: 'Last 1h' }).focus();
  await page.keyboard.press('Enter');
  await page.waitForURL(/window=1h/);
  assert.equal(await page.locator('section.health').first().locator('details tbody tr').count(), 12);
  const { bad: low, unlabeled } = await page.evaluate(contrastCheck);
  assert.deepEqual(low, [], 'text below 4.5:1');
  assert.deepEqual(unlabeled, []);
  const phone = await signIn(await browser.newContext({ viewport: { width: 375, height: 812 } }));
  for (const w of ['1h', '24h', '7d']) {
    await phone.goto(`${sluice.url}/delivery-health?window=${w}`);
    await phone.evaluate(() => document.querySelectorAll('details').forEach((d) => { d.open = true; }));
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `${w} is ${width}px wide`);
  }
});

test('the debugger finds calls by type, name, user and messageId', async () => {
  const dbg = `${sluice.url}/sources/${state.sourceId}/debugger`;
  await page.goto(dbg);
  await page.getByLabel('userId or anonymousId').fill('anon-9');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.waitForURL(/user=anon-9/);
  assert.equal(await page.locator('#events > li').count(), 1);
  assert.match(await page.locator('#events .what').textContent(), /Pricing/);
  await page.goto(dbg);
  await page.getByLabel('Type').selectOption('identify');
  await page.getByRole('button', { name: 'Search' }).click();
  assert.equal(await page.locator('#events > li').count(), 1);
  await page.goto(`${dbg}?event=Bought`);
  assert.equal(await page.locator('#events > li').count(), 1);
  await page.goto(`${dbg}?message_id=m-ping`);
  assert.equal(await page.locator('#events > li').count(), 1);
  await page.goto(`${dbg}?event=Nothing`);
  await page.locator('#empty').waitFor();
  const { bad: low, unlabeled } = await page.evaluate(contrastCheck);
  assert.deepEqual(low, []);
  assert.deepEqual(unlabeled, []);
});

test('a searched live debugger shows only matching new calls, and pause stops it', async () => {
  const dbg = `${sluice.url}/sources/${state.sourceId}/debugger?event=Live`;
  await page.goto(dbg);
  await send('track', { userId: 'u-5', event: 'Other', messageId: 'm-other' });
  await send('track', { userId: 'u-5', event: 'Live', messageId: 'm-live-1' });
  await page.locator('#events li', { hasText: 'Live' }).waitFor();
  assert.equal(await page.locator('#events li', { hasText: 'Other' }).count(), 0);
  await page.getByRole('link', { name: 'Pause' }).focus();
  await page.keyboard.press('Enter');
  await page.getByText('Paused: new calls are not shown.').waitFor();
  assert.equal(await page.locator('ol[data-poll]').count(), 0);
  await send('track', { userId: 'u-5', event: 'Live', messageId: 'm-live-2' });
  await page.waitForTimeout(3000);
  assert.equal(await page.locator('#events > li').count(), 1, 'paused: the new call is not shown');
  await page.getByRole('link', { name: 'Resume' }).click();
  assert.equal(await page.locator('#events > li').count(), 2);
  assert.ok(await page.locator('ol[data-poll]').count() === 1, 'live again');
});

test('the delivery log finds deliveries by call and by HTTP status', async () => {
  const okLog = `${sluice.url}/destinations/${state.okId}/deliveries`;
  const failLog = `${sluice.url}/destinations/${state.failingId}/deliveries`;
  await page.goto(okLog);
  await page.getByLabel('userId or anonymousId').fill('anon-9');
  await page.getByRole('button', { name: 'Filter' }).click();
  assert.equal(await page.locator('li.delivery').count(), 1);
  assert.match(await page.locator('li.delivery .carried').textContent(), /anonymousId anon-9/);
  await page.goto(`${okLog}?type=identify`);
  assert.equal(await page.locator('li.delivery').count(), 1);
  await page.goto(`${okLog}?event=Ping`);
  assert.equal(await page.locator('li.delivery .pill.filtered').count(), 1);
  await page.goto(`${okLog}?status=200`);
  assert.ok(await page.locator('li.delivery').count() >= 3);
  await page.goto(failLog);
  await page.getByLabel('HTTP status').fill('5xx');
  await page.getByRole('button', { name: 'Filter' }).click();
  assert.ok(await page.locator('li.delivery').count() >= 4);
  await page.goto(`${failLog}?status=200`);
  await page.locator('#no-deliveries').waitFor();
  await page.goto(`${failLog}?status=6xx`);
  assert.match(await page.locator('#window-error').textContent(), /status: '6xx' is not a status/);
  const { bad: low, unlabeled } = await page.evaluate(contrastCheck);
  assert.deepEqual(low, []);
  assert.deepEqual(unlabeled, []);
});

test('dead deliveries are recovered from the dashboard since a time', async () => {
  bad.state.failing = false;
  const failLog = `${sluice.url}/destinations/${state.failingId}/deliveries`;
  await until(page, `${failLog}?state=dead`, async (q) => (await q.locator('.pill.dead').count()) >= 4);
  await page.getByLabel('Replay dead deliveries that died since').fill('1h');
  await page.getByRole('button', { name: 'Replay dead since' }).click();
  await page.getByText(/dead deliveries that died since .* replayed/).waitFor();
  await until(page, `${failLog}?state=succeeded`, async (q) => (await q.locator('.pill.succeeded').count()) >= 4);
});
