// The delivery log in a real browser against a real receiver: each row says
// what its call carries, a time window narrows the log, and dead deliveries
// are replayed by when they died.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startReceiver } from '../lib/receiver.mjs';
import { startSluice } from '../lib/sluice.mjs';

const SECRET = 's3cret-for-the-delivery-log';

let sluice;
let browser;
let receiver;
let page;
const state = { writeKey: '', destinationId: '' };

before(async () => {
  receiver = await startReceiver(SECRET);
  sluice = await startSluice({
    // Short retries so that a failing receiver makes a dead delivery in seconds.
    SLUICE_DELIVERY__RETRY_WINDOW_SECS: '2',
    SLUICE_DELIVERY__BACKOFF_BASE_MS: '200',
    SLUICE_DELIVERY__BACKOFF_CAP_MS: '400',
    SLUICE_DELIVERY__TIMEOUT_MS: '2000',
  });
  const source = await sluice.admin('POST', '/api/v1/sources', { name: 'web' });
  state.writeKey = source.write_key;
  const dest = await sluice.admin('POST', '/api/v1/destinations', {
    name: 'Order hooks',
    enabled: true,
    source_ids: [source.id],
    settings: { urls: [`${receiver.url}/hook`], sharedSecret: SECRET },
  });
  state.destinationId = dest.id;
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('dialog', (d) => d.accept());
  await page.goto(`${sluice.url}/signin`);
  await page.getByLabel('Admin token').fill(sluice.token);
  await page.getByRole('button', { name: 'Sign in with the admin token' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
});

after(async () => {
  await browser?.close();
  await sluice?.stop();
  await receiver?.close();
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

const log = () => `${sluice.url}/destinations/${state.destinationId}/deliveries`;

/** Reloads `url` until `selector` is on the page. */
async function until(url, selector, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await page.goto(url);
    if ((await page.locator(selector).count()) > 0) return;
    if (Date.now() > deadline) throw new Error(`${selector} never appeared on ${url}`);
    await page.waitForTimeout(300);
  }
}

test('each delivery row shows its call\'s type, name and userId', async () => {
  await send('page', { userId: 'u-1', name: 'Pricing', messageId: 'm-page-1' });
  await receiver.waitFor((r) => r.json?.messageId === 'm-page-1' && !r.failed);
  await until(`${log()}?message_id=m-page-1`, '.pill.succeeded');
  assert.match(await page.locator('.rounds').first().textContent(), / 1 attempt round · /);
  // Nothing is dead yet: no replay controls.
  await page.goto(log());
  assert.equal(await page.getByRole('button', { name: 'Replay all dead deliveries' }).count(), 0);
  assert.equal(await page.getByRole('button', { name: 'Replay dead since' }).count(), 0);
  receiver.state.failing = true;
  await send('track', { userId: 'u-42', event: 'Order Completed', messageId: 'm-dead-1' });
  await until(`${log()}?state=dead`, '.pill.dead');
  receiver.state.failing = false;
  await until(`${log()}?message_id=m-page-1`, '.pill.succeeded');

  await page.goto(log());
  const dead = page.locator('li.delivery', { hasText: 'm-dead-1' });
  assert.equal((await dead.locator('.carried .kind').textContent()).trim(), 'track');
  assert.equal((await dead.locator('.carried .name').textContent()).trim(), 'Order Completed');
  assert.equal((await dead.locator('.carried .user').textContent()).trim(), 'u-42');
  const pageRow = page.locator('li.delivery', { hasText: 'm-page-1' });
  assert.equal((await pageRow.locator('.carried .kind').textContent()).trim(), 'page');
  assert.equal((await pageRow.locator('.carried .name').textContent()).trim(), 'Pricing');
});

test('a time window narrows the log to deliveries changed in it', async () => {
  await page.goto(log());
  await page.getByLabel('Changed since').fill('1h');
  await page.getByRole('button', { name: 'Filter' }).click();
  assert.equal(await page.locator('li.delivery').count(), 2);
  await page.getByLabel('Changed since').fill('');
  await page.getByLabel('Changed until').fill('2020-01-01');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.locator('#no-deliveries').waitFor();
  assert.equal(await page.getByLabel('Changed until').inputValue(), '2020-01-01');
  await page.getByLabel('Changed until').fill('yesterday');
  await page.getByRole('button', { name: 'Filter' }).click();
  assert.match(await page.locator('#window-error').textContent(), /until: 'yesterday' is not a time/);
});

test('replay dead since a time replays only the deliveries that died since then', async () => {
  await page.goto(log());
  const future = new Date(Date.now() + 3600_000).toISOString().slice(0, 16);
  await page.getByLabel('Replay dead deliveries that died since').fill(future);
  await page.getByRole('button', { name: 'Replay dead since' }).click();
  await page.getByText(/^0 dead deliveries that died since .* replayed/).waitFor();
  assert.equal(await page.locator('.pill.dead').count(), 1);

  await page.getByLabel('Replay dead deliveries that died since').fill('1h');
  await page.getByRole('button', { name: 'Replay dead since' }).click();
  await page.getByText(/^1 dead delivery that died since .* replayed/).waitFor();
  await until(`${log()}?message_id=m-dead-1`, '.pill.succeeded');
  const ok = await receiver.waitFor((r) => r.json?.messageId === 'm-dead-1' && !r.failed);
  assert.ok(ok.signed);
});
