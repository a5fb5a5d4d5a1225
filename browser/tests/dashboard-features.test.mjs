// The dashboard pages of the features that came after the setup flow, in a
// real browser against the real binary, with a real receiver: the schema
// with block toggles and the tracking plan, destination filters, blocked and
// suppressed calls in the debugger and usage, regulations and the
// suppression list, computed traits and audiences (builder, preview,
// members), and profile lookup. Screenshots as in dashboard.test.mjs
// (UPDATE_SCREENSHOTS=1 writes them to docs/screenshots/).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launch } from '../lib/browser.mjs';
import { startReceiver } from '../lib/receiver.mjs';
import { startSluice } from '../lib/sluice.mjs';

const SECRET = 's3cret-for-the-feature-pages';
const SHOTS = process.env.UPDATE_SCREENSHOTS === '1'
  ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
  : `${mkdtempSync(join(tmpdir(), 'sluice-screenshots-'))}/`;
mkdirSync(SHOTS, { recursive: true });

let sluice;
let browser;
let receiver;
let page;
const state = { writeKey: '', sourceId: '', destinationId: '', consoleErrors: [] };

before(async () => {
  receiver = await startReceiver(SECRET);
  sluice = await startSluice({
    SLUICE_SCHEMA__FLUSH_INTERVAL_MS: '200',
    SLUICE_PERSONAS__POLL_INTERVAL_MS: '100',
  });
  const source = await sluice.admin('POST', '/api/v1/sources', { name: 'shop' });
  state.writeKey = source.write_key;
  state.sourceId = source.id;
  const dest = await sluice.admin('POST', '/api/v1/destinations', {
    name: 'Warehouse hooks',
    source_ids: [source.id],
    settings: { urls: [`${receiver.url}/hook`], sharedSecret: SECRET },
  });
  state.destinationId = dest.id;
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('console', (m) => { if (m.type() === 'error') state.consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => state.consoleErrors.push(String(e)));
  // Every confirmation prompt (delete, replay) is accepted.
  page.on('dialog', (d) => d.accept());
  await page.goto(`${sluice.url}/signin`);
  await page.getByLabel('Admin token').fill(sluice.token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
});

after(async () => {
  await browser?.close();
  await sluice?.stop();
  await receiver?.close();
});

const shot = (p, name) => p.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });

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

/** Reloads `url` until `selector` is on the page. */
async function until(url, selector, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await page.goto(url);
    if ((await page.locator(selector).count()) > 0) return;
    if (Date.now() > deadline) throw new Error(`${selector} never appeared on ${url}`);
    await page.waitForTimeout(250);
  }
}

/** The receiver got `messageId`; calls sent before it on the same source were decided already. */
const arrived = (messageId) => receiver.waitFor((r) => r.json?.messageId === messageId);
const neverArrived = (messageId) => !receiver.received.some((r) => r.json?.messageId === messageId);

test('the schema lists what the source sent with volumes, and a track event is blocked from its row', async () => {
  await send('track', { userId: 'u1', event: 'Order Completed', messageId: 'oc-1', properties: { total: 20, env: 'prod' } });
  await send('track', { userId: 'u1', event: 'Order Completed', messageId: 'oc-2', properties: { total: '30' } });
  await send('track', { userId: 'u1', event: 'Debug Ping', messageId: 'dp-1' });
  await send('identify', { userId: 'u1', messageId: 'id-1', traits: { plan: 'pro', ssn: '000-00-0000' } });
  const schema = `${sluice.url}/sources/${state.sourceId}/schema`;
  await until(`${schema}?kind=track`, '#schema td:text-is("Debug Ping")');
  const row = page.locator('#schema tbody tr', { hasText: 'Order Completed' });
  const cells = await row.locator('td').allTextContents();
  assert.equal(cells[0], 'track');
  assert.equal(cells[4], '2', '24 h volume');
  // A property seen as a number and as a string shows both types.
  await page.goto(`${schema}?kind=property`);
  const total = page.locator('#schema tbody tr', { hasText: 'total' });
  assert.equal((await total.locator('td').nth(3).textContent()).trim(), 'number, string');

  await page.goto(`${schema}?kind=track`);
  await page.getByRole('button', { name: 'Block Debug Ping' }).click();
  await page.getByText('Rules saved').waitFor();
  await page.locator('#schema tr.blocked', { hasText: 'Debug Ping' }).waitFor();
  const rules = await sluice.admin('GET', `/api/v1/sources/${state.sourceId}/rules`);
  assert.deepEqual(rules.blocked_events, ['Debug Ping']);
  await shot(page, 'schema');

  await send('track', { userId: 'u1', event: 'Debug Ping', messageId: 'dp-2' });
  await send('track', { userId: 'u1', event: 'Order Completed', messageId: 'oc-3' });
  await arrived('oc-3');
  assert.ok(neverArrived('dp-2'), 'a blocked call is sent nowhere');
});

test('the debugger marks a blocked call with the rule that blocked it', async () => {
  await page.goto(`${sluice.url}/sources/${state.sourceId}/debugger`);
  const blocked = page.locator('#events li.blocked', { hasText: 'Debug Ping' });
  await blocked.waitFor();
  assert.equal(await blocked.count(), 1, 'only the call after the rule is blocked');
  assert.match(await blocked.locator('summary').textContent(), /Blocked by blocked_events/);
  await blocked.locator('summary').click();
  assert.equal(JSON.parse(await blocked.locator('pre.json').textContent()).messageId, 'dp-2');
  assert.equal(await page.locator('#events li.blocked', { hasText: 'Order Completed' }).count(), 0);
});

test('a blocked trait is removed from identify calls before they are stored and sent', async () => {
  await page.goto(`${sluice.url}/sources/${state.sourceId}/schema?kind=identify_trait`);
  await page.getByRole('button', { name: 'Block ssn' }).click();
  await page.getByText('Rules saved').waitFor();
  await page.locator('#blocked code', { hasText: 'ssn' }).waitFor();
  await send('identify', { userId: 'u1', messageId: 'id-2', traits: { plan: 'team', ssn: '111-11-1111' } });
  const hit = await arrived('id-2');
  assert.ok(hit.signed);
  assert.deepEqual(hit.json.traits, { plan: 'team' });
  // Unblocking from the "Blocked" list puts it back.
  await page.getByRole('button', { name: 'Unblock ssn' }).first().click();
  await page.getByText('Rules saved').waitFor();
  const rules = await sluice.admin('GET', `/api/v1/sources/${state.sourceId}/rules`);
  assert.deepEqual(rules.blocked_identify_traits, []);
});

test('an enforced tracking plan blocks unplanned events, marked tracking_plan in the debugger', async () => {
  await page.goto(`${sluice.url}/sources/${state.sourceId}/schema`);
  await page.getByLabel('Enforce the tracking plan').check();
  await page.getByLabel('Planned track events').fill('Order Completed\nSigned Up');
  await page.getByRole('button', { name: 'Save tracking plan' }).click();
  await page.getByText('Rules saved').waitFor();
  assert.ok(await page.getByLabel('Enforce the tracking plan').isChecked());
  await send('track', { userId: 'u1', event: 'Unplanned Thing', messageId: 'up-1' });
  await send('track', { userId: 'u1', event: 'Signed Up', messageId: 'su-1' });
  await arrived('su-1');
  assert.ok(neverArrived('up-1'));
  await page.goto(`${sluice.url}/sources/${state.sourceId}/debugger`);
  const li = page.locator('#events li', { hasText: 'Unplanned Thing' });
  assert.match(await li.locator('summary').textContent(), /Blocked by tracking_plan/);
  await shot(page, 'debugger-blocked');
  // Switch enforcement off again; the list stays.
  await page.goto(`${sluice.url}/sources/${state.sourceId}/schema`);
  await page.getByLabel('Enforce the tracking plan').uncheck();
  await page.getByRole('button', { name: 'Save tracking plan' }).click();
  await page.getByText('Rules saved').waitFor();
  const rules = await sluice.admin('GET', `/api/v1/sources/${state.sourceId}/rules`);
  assert.deepEqual(rules.tracking_plan, { enabled: false, events: ['Order Completed', 'Signed Up'] });
});

test('destination filters: a bad path gets the API message, a drop filter makes filtered deliveries, drop fields trims the body, delete removes', async () => {
  const dest = `${sluice.url}/destinations/${state.destinationId}`;
  await page.goto(dest);
  await page.getByText('No filters').waitFor();
  await page.getByLabel('Filter name').fill('no pii');
  await page.getByLabel('Action').selectOption('drop_fields');
  await page.getByLabel('Fields to remove (drop fields)').fill('properties..email');
  await page.getByRole('button', { name: 'Add filter' }).click();
  await page.locator('#errors').getByText("filters[0].fields[0]: invalid property path 'properties..email': empty segment").waitFor();
  // What was typed is kept; fix it.
  assert.equal(await page.getByLabel('Filter name').inputValue(), 'no pii');
  await page.getByLabel('Fields to remove (drop fields)').fill('properties.email');
  await page.getByRole('button', { name: 'Add filter' }).click();
  await page.getByText('Filters saved').waitFor();

  await page.getByLabel('Filter name').fill('no test orders');
  await page.getByLabel('Field', { exact: true }).fill('properties.env');
  await page.getByLabel('Operator').selectOption('eq');
  await page.getByLabel('Value', { exact: true }).fill('test');
  await page.getByRole('button', { name: 'Add filter' }).click();
  await page.getByText('Filters saved').waitFor();
  const rows = page.locator('#filters tbody tr');
  assert.equal(await rows.count(), 2);
  assert.match(await rows.nth(1).textContent(), /properties\.env eq test/);
  await shot(page, 'destination-filters');

  await send('track', { userId: 'u1', event: 'Order Completed', messageId: 'f-test', properties: { env: 'test' } });
  await send('track', { userId: 'u1', event: 'Order Completed', messageId: 'f-prod', properties: { env: 'prod', email: 'a@example.com' } });
  const prod = await arrived('f-prod');
  assert.ok(prod.signed, 'the trimmed body is what is signed');
  assert.equal(prod.json.properties.email, undefined);
  assert.equal(prod.json.properties.env, 'prod');
  assert.ok(neverArrived('f-test'));
  await page.goto(`${dest}/deliveries?state=filtered`);
  const filtered = page.locator('li.delivery', { hasText: 'f-test' });
  await filtered.locator('.pill.filtered').waitFor();
  assert.match(await filtered.textContent(), /Dropped by the filter no test orders/);

  await page.goto(dest);
  await page.getByRole('button', { name: 'Delete filter no test orders' }).click();
  await page.getByText('Filters saved').waitFor();
  const doc = await sluice.admin('GET', `/api/v1/destinations/${state.destinationId}/filters`);
  assert.deepEqual(doc.filters.map((f) => f.name), ['no pii']);
});

test('suppressed calls are counted in the debugger and usage; blocked calls in usage, chart and table', async () => {
  await sluice.admin('POST', '/api/v1/regulations', { regulationType: 'SUPPRESS_ONLY', subjectIds: ['u-gone'] });
  await send('track', { userId: 'u-gone', event: 'Order Completed', messageId: 'sup-1' });
  await send('track', { userId: 'u-gone', event: 'Order Completed', messageId: 'sup-2' });
  await until(`${sluice.url}/sources/${state.sourceId}/debugger`, '#suppressed-today:text-is("2")');
  assert.equal(await page.locator('#events li', { hasText: 'sup-1' }).count(), 0);
  await page.goto(`${sluice.url}/usage?source=${state.sourceId}`);
  const today = new Date().toISOString().slice(0, 10);
  const cells = await page.locator('tbody tr', { hasText: today }).locator('td').allTextContents();
  // Day, API calls, events (stored, blocked included), blocked, suppressed.
  const usage = await sluice.admin('GET', `/api/v1/sources/${state.sourceId}/usage`);
  const day = usage.data.find((d) => d.day === today);
  assert.deepEqual(cells, [today, String(day.api_calls), String(day.events), '2', '2']);
  assert.ok(await page.locator('figure.chart rect.s-blocked').count() > 0);
  assert.ok(await page.locator('figure.chart rect.s-suppressed').count() > 0);
  await shot(page, 'usage-blocked');
});
