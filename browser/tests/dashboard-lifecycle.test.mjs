// Lifecycle controls in a real browser with JavaScript switched off: a
// source renamed, disabled, enabled and deleted, a destination deleted, each
// through a confirmation page that says what goes with the change.
// Screenshots as in dashboard.test.mjs (UPDATE_SCREENSHOTS=1).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startReceiver } from '../lib/receiver.mjs';
import { shot } from '../lib/screenshots.mjs';
import { startSluice } from '../lib/sluice.mjs';

const SECRET = 's3cret-for-the-lifecycle-pages';

let sluice;
let browser;
let receiver;
let page;
const state = { writeKey: '', sourceId: '', destinationId: '' };

before(async () => {
  receiver = await startReceiver(SECRET);
  sluice = await startSluice();
  const source = await sluice.admin('POST', '/api/v1/sources', { name: 'web' });
  state.writeKey = source.write_key;
  state.sourceId = source.id;
  const dest = await sluice.admin('POST', '/api/v1/destinations', {
    name: 'Order hooks',
    source_ids: [source.id],
    settings: { urls: [`${receiver.url}/hook`], sharedSecret: SECRET },
  });
  state.destinationId = dest.id;
  browser = await launch();
  // No script: the confirmation must be a page, not a prompt.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, javaScriptEnabled: false });
  page = await context.newPage();
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

async function track() {
  const res = await fetch(`${sluice.url}/v1/track`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${state.writeKey}:`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ userId: 'u1', event: 'Lifecycle Probe' }),
  });
  return res.status;
}

test('renaming a source asks first, then changes only its name', async () => {
  await page.goto(`${sluice.url}/sources/${state.sourceId}`);
  await page.getByLabel('New name').fill('website');
  await page.getByRole('button', { name: 'Rename…' }).click();
  await page.getByRole('heading', { name: 'Rename this source?' }).waitFor();
  assert.match(await page.locator('#consequences').textContent(), /Only the name changes/);
  assert.equal((await sluice.admin('GET', `/api/v1/sources/${state.sourceId}`)).name, 'web');
  await page.getByRole('button', { name: 'Rename source' }).click();
  await page.getByText('Source renamed.').waitFor();
  await page.getByRole('heading', { name: 'website' }).waitFor();
  assert.equal((await sluice.admin('GET', `/api/v1/sources/${state.sourceId}`)).name, 'website');
});

test('disabling a source says its calls will be refused, and they are until it is enabled again', async () => {
  await page.goto(`${sluice.url}/sources/${state.sourceId}`);
  await page.getByRole('button', { name: 'Disable…' }).click();
  const says = await page.locator('#consequences').textContent();
  assert.match(says, /401 source is disabled/);
  assert.match(says, /connected to Order hooks/);
  assert.equal(await track(), 200, 'nothing changes before confirming');
  await page.getByRole('button', { name: 'Disable source' }).click();
  await page.getByRole('button', { name: 'Enable…' }).waitFor();
  assert.equal(await track(), 401);
  await page.getByRole('button', { name: 'Enable…' }).click();
  await page.getByRole('button', { name: 'Enable source' }).click();
  await page.getByRole('button', { name: 'Disable…' }).waitFor();
  assert.equal(await track(), 200);
});

test('deleting a destination asks first, says what goes, and Cancel keeps it', async () => {
  await page.goto(`${sluice.url}/destinations/${state.destinationId}`);
  await page.getByRole('button', { name: 'Delete destination…' }).click();
  await page.getByRole('heading', { name: 'Delete this destination?' }).waitFor();
  const says = await page.locator('#consequences').textContent();
  assert.match(says, /Order hooks/);
  assert.match(says, /filters are deleted/);
  assert.match(await page.locator('#pending-note').textContent(), /pending|No delivery is waiting/);
  await shot(page, 'destination-delete-confirm');
  await page.getByRole('link', { name: 'Cancel' }).click();
  await page.waitForURL(`${sluice.url}/destinations/${state.destinationId}`);
  await sluice.admin('GET', `/api/v1/destinations/${state.destinationId}`);

  await page.getByRole('button', { name: 'Delete destination…' }).click();
  await page.getByRole('button', { name: 'Delete destination', exact: true }).click();
  await page.getByText('Destination deleted.').waitFor();
  const res = await fetch(`${sluice.url}/api/v1/destinations/${state.destinationId}`, {
    headers: { authorization: `Bearer ${sluice.token}` },
  });
  assert.equal(res.status, 404);
});

test('deleting a source asks first, then its write key stops working', async () => {
  await page.goto(`${sluice.url}/sources/${state.sourceId}`);
  await page.getByRole('button', { name: 'Delete source…' }).click();
  await page.getByRole('heading', { name: 'Delete this source?' }).waitFor();
  assert.match(await page.locator('#consequences').textContent(), /write key stops working/);
  await shot(page, 'source-delete-confirm');
  await page.getByRole('button', { name: 'Delete source', exact: true }).click();
  await page.getByText('Source deleted.').waitFor();
  assert.deepEqual((await sluice.admin('GET', '/api/v1/sources')).data, []);
  assert.equal(await track(), 401);
});
