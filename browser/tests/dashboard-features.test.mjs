// The dashboard pages of the features that came after the setup flow, in a
// real browser against the real binary, with a real receiver: the schema
// with block toggles and the tracking plan, destination filters, blocked and
// suppressed calls in the debugger and usage, regulations and the
// suppression list, computed traits and audiences (builder, preview,
// members), and profile lookup. Screenshots as in dashboard.test.mjs
// (UPDATE_SCREENSHOTS=1 writes them to docs/screenshots/).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startReceiver } from '../lib/receiver.mjs';
import { shot } from '../lib/screenshots.mjs';
import { startSluice } from '../lib/sluice.mjs';

const SECRET = 's3cret-for-the-feature-pages';

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
  // Longer than a block list takes (200 characters), though ingest records it.
  const long = `Long ${'L'.repeat(245)}`;
  await send('track', { userId: 'u1', event: long, messageId: 'long-1' });
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
  // Its row says why it cannot be blocked instead of a Block button that always fails.
  const longRow = page.locator('#schema tbody tr', { hasText: long });
  assert.match(await longRow.textContent(), /Cannot be blocked: longer than 200 characters/);
  assert.equal(await longRow.getByRole('button').count(), 0);
  // A property seen as a number and as a string shows both types.
  await page.goto(`${schema}?kind=property`);
  const total = page.locator('#schema tbody tr', { hasText: 'total' });
  assert.equal((await total.locator('td').nth(3).textContent()).trim(), 'number, string');

  await page.goto(`${schema}?kind=track`);
  await page.getByRole('button', { name: 'Block Debug Ping', exact: true }).click();
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
  await page.getByRole('button', { name: 'Block ssn', exact: true }).click();
  await page.getByText('Rules saved').waitFor();
  await page.locator('#blocked code', { hasText: 'ssn' }).waitFor();
  await send('identify', { userId: 'u1', messageId: 'id-2', traits: { plan: 'team', ssn: '111-11-1111' } });
  const hit = await arrived('id-2');
  assert.ok(hit.signed);
  assert.deepEqual(hit.json.traits, { plan: 'team' });
  // Unblocking from the "Blocked" list puts it back.
  await page.getByRole('button', { name: 'Unblock ssn', exact: true }).first().click();
  await page.getByRole('button', { name: 'Block ssn', exact: true }).waitFor();
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
  await page.getByLabel('Operator').selectOption({ label: 'equals' });
  await page.getByLabel('Value', { exact: true }).fill('test');
  await page.getByRole('button', { name: 'Add filter' }).click();
  await page.locator('#filters tbody tr', { hasText: 'no test orders' }).waitFor();
  const rows = page.locator('#filters tbody tr');
  assert.equal(await rows.count(), 2);
  assert.match(await rows.nth(1).textContent(), /properties\.env equals test/);
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

test('computed trait builder: the API refuses a sum without property, preview shows count and sample, save delivers the values', async () => {
  await send('track', { userId: 'b1', event: 'Purchase', messageId: 'p-1', properties: { total: 20 } });
  await send('track', { userId: 'b1', event: 'Purchase', messageId: 'p-2', properties: { total: 30 } });
  await send('track', { userId: 'b2', event: 'Purchase', messageId: 'p-3', properties: { total: 5 } });
  await send('identify', { userId: 'b1', messageId: 'p-id', traits: { plan: 'pro' } });
  await arrived('p-id');
  await page.goto(`${sluice.url}/computed-traits`);
  await page.getByText('None yet.').waitFor();
  await page.getByRole('link', { name: 'New computed trait' }).click();
  await page.getByLabel('Name', { exact: true }).fill('Big Purchases');
  await page.getByLabel('Kind', { exact: true }).selectOption('sum');
  await page.getByLabel('Track event', { exact: true }).fill('Purchase');
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.locator('#errors').getByText('definition.property: is required for this kind').waitFor();
  await page.getByLabel('Kind', { exact: true }).selectOption('counter');
  await page.getByLabel('Property 1').fill('total');
  await page.getByLabel('Operator 1').selectOption('gt');
  await page.getByLabel('Value 1').fill('10');
  await page.getByLabel('Last', { exact: true }).fill('30');
  // The labels of one row line up, a select's beside an input's.
  const top = async (text) => (await page.locator('label', { hasText: text }).first().boundingBox()).y;
  const [p1, o1, v1] = [await top('Property 1'), await top('Operator 1'), await top('Value 1')];
  assert.ok(Math.abs(p1 - o1) < 1 && Math.abs(v1 - o1) < 1, `labels at ${p1}, ${o1}, ${v1}`);
  const [last, unit] = [await top(/^Last$/), await top(/^Unit$/)];
  assert.ok(Math.abs(last - unit) < 1, `labels at ${last}, ${unit}`);
  await page.getByLabel('Warehouse hooks').check();
  // The engine may still be catching up with the calls: preview until both are in.
  const deadline = Date.now() + 15_000;
  for (;;) {
    await page.getByRole('button', { name: 'Preview' }).click();
    await page.locator('#preview').waitFor();
    const sample = await page.locator('#preview-sample tbody tr').allTextContents().catch(() => []);
    if (sample.some((r) => r.includes('b1') && r.endsWith('2'))) break;
    if (Date.now() > deadline) throw new Error(`preview never showed b1 with 2: ${sample}`);
  }
  assert.equal((await page.locator('#preview-count').textContent()).trim(), '1');
  await shot(page, 'computed-trait-preview');
  // Nothing was saved by previewing.
  assert.deepEqual((await sluice.admin('GET', '/api/v1/computed-traits')).data, []);
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForURL(/\/computed-traits\/ctr_[A-Za-z0-9]+\?created=1$/);
  const hit = await receiver.waitFor((r) => r.json?.traits?.big_purchases !== undefined);
  assert.ok(hit.signed);
  assert.equal(hit.json.userId, 'b1');
  assert.equal(hit.json.traits.big_purchases, 2);
  await until(page.url(), '#members td:text-is("b1")');
  await page.goto(`${sluice.url}/computed-traits`);
  assert.equal((await page.locator('#computations td.count').first().textContent()).trim(), '1');
});

test('audience builder: a bad JSON condition is refused, structured conditions preview and save, members page, connecting a destination sends membership', async () => {
  await page.goto(`${sluice.url}/audiences/new`);
  await page.getByLabel('Name', { exact: true }).fill('Pro Buyers');
  await page.getByLabel('Condition as JSON (replaces the fields above)').fill('{"or": [');
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.locator('#errors').getByText(/condition: invalid JSON/).waitFor();
  await page.getByLabel('Condition as JSON (replaces the fields above)').fill('{"or": []}');
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.locator('#errors').getByText(/needs at least one condition|non-empty/).waitFor();
  await page.getByLabel('Condition as JSON (replaces the fields above)').fill('');
  await page.getByLabel('Track event', { exact: true }).fill('Purchase');
  await page.getByLabel('How often').selectOption('at_least');
  await page.getByLabel('Times', { exact: true }).fill('2');
  await page.getByLabel('Trait', { exact: true }).fill('plan');
  await page.getByLabel('Trait operator', { exact: true }).selectOption('equals');
  await page.getByLabel('Trait value', { exact: true }).fill('pro');
  await page.getByRole('button', { name: 'Preview' }).click();
  assert.equal((await page.locator('#preview-count').textContent()).trim(), '1');
  assert.match(await page.locator('#preview-line').textContent(), /^1 member among \d+ profiles?\./);
  await page.locator('#preview-sample').getByText('b1', { exact: true }).waitFor();
  await page.getByRole('button', { name: 'Save' }).click();
  await page.waitForURL(/\/audiences\/aud_[A-Za-z0-9]+\?created=1$/);
  const url = page.url().split('?')[0];
  await until(url, '#members td:text-is("b1")');
  // Headings and labels start with a capital, as elsewhere.
  assert.equal(await page.getByRole('heading', { name: 'Members', exact: true }).count(), 1);
  assert.equal((await page.locator('#count').textContent()).trim(), '1');
  await shot(page, 'audience');
  assert.ok(neverArrivedTrait('pro_buyers'), 'not connected yet: nothing sent');
  await page.getByRole('button', { name: 'Connect Warehouse hooks' }).click();
  await page.getByText('Destinations updated').waitFor();
  const hit = await receiver.waitFor((r) => r.json?.traits?.pro_buyers === true);
  assert.ok(hit.signed);
  assert.equal(hit.json.userId, 'b1');
  await page.goto(`${sluice.url}/audiences`);
  await shot(page, 'audiences');
});

function neverArrivedTrait(key) {
  return !receiver.received.some((r) => r.json?.traits?.[key] !== undefined);
}

test('profile lookup shows identities, traits, computed values, audiences and newest events; an unknown id says so', async () => {
  await page.goto(`${sluice.url}/profiles`);
  await page.getByLabel('userId or anonymousId').fill('b1');
  await page.getByRole('button', { name: 'Look up' }).click();
  await page.locator('#identities').getByText('b1', { exact: true }).waitFor();
  assert.match(await page.locator('#traits').textContent(), /plan\s*pro/);
  assert.match(await page.locator('#computed').textContent(), /big_purchases\s*2/);
  await page.locator('#audiences').getByRole('link', { name: 'Pro Buyers' }).waitFor();
  assert.equal(await page.locator('#profile-events li', { hasText: 'Purchase' }).count(), 2);
  // Events name their source and show their time as the other pages do.
  const first = page.locator('#profile-events li summary').first();
  assert.equal((await first.locator('.source').textContent()).trim(), 'shop');
  assert.match((await first.locator('time').textContent()).trim(), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  await shot(page, 'profile');
  await page.getByLabel('userId or anonymousId').fill('nobody-at-all');
  await page.getByRole('button', { name: 'Look up' }).click();
  await page.locator('#errors').getByText('No profile has the userId or anonymousId').waitFor();
});

test('regulations: the API refuses a bad id, a suppress-and-delete purges the user, notifies the destination, and shows status per subject', async () => {
  await page.goto(`${sluice.url}/regulations`);
  await page.getByLabel('Type').selectOption('SUPPRESS_WITH_DELETE');
  await page.getByLabel('User ids').fill('x'.repeat(1100));
  await page.getByRole('button', { name: 'Create regulation' }).click();
  await page.locator('#errors').getByText('subjectIds: each id must be a non-empty string of at most 1024 bytes').waitFor();
  await page.getByLabel('User ids').fill('u1\nnever-seen');
  await page.getByRole('button', { name: 'Create regulation' }).click();
  await page.waitForURL(/\/regulations\/reg_[A-Za-z0-9]+\?created=1$/);
  // A suppressing purge waits until the suppression holds everywhere; the
  // page says so, and that notifications are still to come.
  await page.locator('#settling').waitFor();
  assert.match(await page.locator('#no-notifications').textContent(), /None yet/);
  const url = page.url().split('?')[0];
  await until(url, '#reg-status .pill.finished', 30_000);
  const subjects = await page.locator('#subjects tbody tr').allTextContents();
  assert.equal(subjects.length, 2);
  assert.ok(subjects.some((r) => r.includes('shop')), 'u1 had data in shop');
  assert.ok(subjects.some((r) => r.includes('None')), 'the unknown user had none');
  const del = await receiver.waitFor((r) => r.json?.type === 'delete' && r.json?.userId === 'u1');
  assert.ok(del.signed);
  await until(url, '#notifications .pill.succeeded');
  assert.match(await page.locator('#notifications').textContent(), /Warehouse hooks/);
  await shot(page, 'regulation');
  await page.goto(`${sluice.url}/regulations`);
  assert.match(await page.locator('#regulations').textContent(), /SUPPRESS_WITH_DELETE/);
  await shot(page, 'regulations');
  await page.getByRole('link', { name: 'suppression list' }).click();
  const ids = await page.locator('#suppressions li').allTextContents();
  assert.deepEqual(ids, ['never-seen', 'u-gone', 'u1']);
  // The purge removed u1's stored calls from the debugger.
  await page.goto(`${sluice.url}/sources/${state.sourceId}/debugger`);
  assert.equal(await page.locator('#events li', { hasText: 'oc-1' }).count(), 0);
});

/** WCAG relative luminance contrast of two rgb() strings. */
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
    const fg = getComputedStyle(el).color;
    const [a, b] = [lum(fg), lum(background(el))];
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    if (ratio < 4.5) bad.push(`${el.tagName}.${el.className} "${el.textContent.trim().slice(0, 30)}" ${ratio.toFixed(2)}`);
  }
  const unlabeled = [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
    .filter((f) => f.labels.length === 0 && !f.getAttribute('aria-label'))
    .map((f) => f.name);
  return { bad, unlabeled };
}

test('every new page: labelled controls, AA text contrast, and nothing scrolls sideways at 375 px', async () => {
  const traits = await sluice.admin('GET', '/api/v1/computed-traits');
  const audiences = await sluice.admin('GET', '/api/v1/audiences');
  const regs = await sluice.admin('GET', '/api/v1/regulations');
  const paths = [
    `/sources/${state.sourceId}/schema`,
    `/sources/${state.sourceId}/debugger`,
    `/destinations/${state.destinationId}`,
    `/destinations/${state.destinationId}/deliveries?state=filtered`,
    `/usage?source=${state.sourceId}`,
    '/regulations',
    `/regulations/${regs.data[0].id}`,
    '/suppressions',
    '/computed-traits',
    '/computed-traits/new',
    `/computed-traits/${traits.data[0].id}`,
    '/audiences',
    '/audiences/new',
    `/audiences/${audiences.data[0].id}`,
    '/profiles?id=b1',
  ];
  // Long names wrap or scroll inside their own box: a source name in the
  // usage selector, a userId in the profile's title, property keys and
  // values in its newest events.
  const wide = await sluice.admin('POST', '/api/v1/sources', { name: `Storefront ${'web '.repeat(12)}(long name)` });
  const longId = 'U'.repeat(150);
  await send('track', { userId: longId, event: 'Wide', messageId: 'wide-1', properties: { ['k'.repeat(120)]: 'v'.repeat(300) } });
  await until(`${sluice.url}/profiles?id=${longId}`, '#profile-events li');
  paths.push(`/usage?source=${wide.id}`, `/profiles?id=${longId}`, `/profiles?id=${'Z'.repeat(150)}`);
  for (const path of paths) {
    await page.goto(`${sluice.url}${path}`);
    const { bad, unlabeled } = await page.evaluate(contrastCheck);
    assert.deepEqual(bad, [], `${path}: text below 4.5:1`);
    assert.deepEqual(unlabeled, [], `${path}: controls without a label`);
  }
  const phone = await browser.newContext({ viewport: { width: 375, height: 812 } });
  const p = await phone.newPage();
  await p.goto(`${sluice.url}/signin`);
  await p.getByLabel('Admin token').fill(sluice.token);
  await p.getByRole('button', { name: 'Sign in with the admin token' }).click();
  await p.getByRole('heading', { name: 'Overview' }).waitFor();
  for (const path of paths) {
    await p.goto(`${sluice.url}${path}`);
    await p.evaluate(() => document.querySelectorAll('details').forEach((d) => { d.open = true; }));
    const width = await p.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `${path} is ${width}px wide`);
  }
  // The schema's Block buttons are in view at phone width, and an event's
  // property rows come after the event's own row.
  await p.goto(`${sluice.url}/sources/${state.sourceId}/schema`);
  const block = p.locator('#schema button', { hasText: 'Block' }).first();
  const box = await block.boundingBox();
  assert.ok(box.x + box.width <= 375, `the Block button ends at ${box.x + box.width}px`);
  const rows = await p.locator('#schema tbody tr', { hasText: 'Order Completed' }).evaluateAll(
    (trs) => trs.map((tr) => tr.cells[0].textContent.trim()),
  );
  assert.equal(rows[0], 'track', rows.join(', '));
  assert.ok(rows.slice(1).every((k) => k === 'property'), rows.join(', '));
  await p.goto(`${sluice.url}/audiences/new`);
  await shot(p, 'audience-builder-375');
  await phone.close();
});

test('the new forms work from the keyboard alone', async () => {
  await page.goto(`${sluice.url}/sources/${state.sourceId}/schema?kind=track`);
  await page.getByRole('button', { name: 'Block Purchase', exact: true }).focus();
  await page.keyboard.press('Enter');
  await page.getByText('Rules saved').waitFor();
  await page.getByRole('button', { name: 'Unblock Purchase', exact: true }).first().focus();
  await page.keyboard.press('Space');
  await page.getByRole('button', { name: 'Block Purchase', exact: true }).waitFor();
  const rules = await sluice.admin('GET', `/api/v1/sources/${state.sourceId}/rules`);
  assert.deepEqual(rules.blocked_events, ['Debug Ping']);
  // The profile search: type and press Enter.
  await page.goto(`${sluice.url}/profiles`);
  await page.getByLabel('userId or anonymousId').focus();
  await page.keyboard.type('b2');
  await page.keyboard.press('Enter');
  await page.locator('#identities').getByText('b2', { exact: true }).waitFor();
});

test('no new page raised a script error or a Content-Security-Policy violation', () => {
  const ours = state.consoleErrors.filter((e) => !/status of 4\d\d/.test(e));
  assert.deepEqual(ours, []);
});
