// Long forms and the destination form's fields in a real browser: thousands
// of regulation ids, a form over its cap shown again with the error on the
// cut field, and every error of a URL row.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startSluice } from '../lib/sluice.mjs';

let sluice;
let browser;
let page;
const state = { sourceId: '' };

before(async () => {
  sluice = await startSluice();
  const source = await sluice.admin('POST', '/api/v1/sources', { name: 'web' });
  state.sourceId = source.id;
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  // Confirmation prompts (the regulation form asks) are accepted.
  page.on('dialog', (d) => d.accept());
  await page.goto(`${sluice.url}/signin`);
  await page.getByLabel('Admin token').fill(sluice.token);
  await page.getByRole('button', { name: 'Sign in with the admin token' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
});

after(async () => {
  await browser?.close();
  await sluice?.stop();
});

/** Sets a field's value at once (typing 100 KiB would take minutes). */
const put = (locator, value) => locator.evaluate((el, v) => { el.value = v; }, value);

const ids = (n) => Array.from({ length: n }, (_, i) => `user-${String(i).padStart(6, '0')}@example.com`).join('\n');

test('a regulation takes 4,000 pasted ids, far over 64 KiB', async () => {
  await page.goto(`${sluice.url}/regulations`);
  await page.getByLabel('Type').selectOption('SUPPRESS_ONLY');
  await put(page.getByLabel('User ids'), ids(4000));
  await page.getByRole('button', { name: 'Create regulation' }).click();
  await page.waitForURL(/\/regulations\/reg_[A-Za-z0-9]+\?created=1$/);
  const regs = await sluice.admin('GET', '/api/v1/regulations');
  assert.equal(regs.data[0].subjects, 4000);
});

test('a file of 3,000 ids fills the ids field and creates the regulation', async () => {
  await page.goto(`${sluice.url}/regulations`);
  await page.getByLabel('Type').selectOption('SUPPRESS_ONLY');
  await page.getByLabel('Or load the ids from a file').setInputFiles({
    name: 'ids.txt',
    mimeType: 'text/plain',
    buffer: Buffer.from(ids(3000).replaceAll('\n', '\r\n')),
  });
  await page.waitForFunction(() => document.getElementById('reg-ids').value.length > 0);
  assert.equal((await page.getByLabel('User ids').inputValue()).split('\n').length, 3000);
  await page.getByRole('button', { name: 'Create regulation' }).click();
  await page.waitForURL(/\/regulations\/reg_[A-Za-z0-9]+\?created=1$/);
  const regs = await sluice.admin('GET', '/api/v1/regulations');
  assert.equal(regs.data[0].subjects, 3000);
});

test('6,000 pasted ids get the API\'s limit on the form, still filled, not a bare error page', async () => {
  await page.goto(`${sluice.url}/regulations`);
  await page.getByLabel('Type').selectOption('DELETE_ONLY');
  await put(page.getByLabel('User ids'), ids(6000));
  await page.getByRole('button', { name: 'Create regulation' }).click();
  await page.locator('#errors').getByText('at most 5000 ids per regulation').waitFor();
  assert.equal(await page.getByLabel('Type').inputValue(), 'DELETE_ONLY');
  assert.equal((await page.getByLabel('User ids').inputValue()).split('\n').length, 6000);
});

test('a destination form over its cap comes back filled, with the error on the field that was cut', async () => {
  await page.goto(`${sluice.url}/destinations/new`);
  await page.getByLabel('Name').fill('Long headers');
  await page.getByLabel('URL 1', { exact: true }).fill('https://example.com/hook');
  // Each header line is about 1 KiB; 300 of them are far over the cap.
  const long = Array.from({ length: 300 }, (_, i) => `X-H${i}: ${'v'.repeat(1000)}`).join('\n');
  await put(page.getByLabel('Headers for URL 1 (optional)'), long);
  await page.getByRole('button', { name: 'Save destination' }).click();
  const error = page.locator('#headers0-error');
  await error.waitFor();
  assert.match(await error.textContent(), /Too long: the whole form may be at most 192 KiB/);
  assert.equal(await page.getByLabel('Name').inputValue(), 'Long headers');
  assert.equal(await page.getByLabel('URL 1', { exact: true }).inputValue(), 'https://example.com/hook');
  assert.equal(await page.getByRole('heading', { name: 'New Webhooks destination' }).count(), 1);
  const all = await sluice.admin('GET', '/api/v1/destinations');
  assert.deepEqual(all.data, [], 'nothing was saved');
});

test('a form without room to show it again gets a page that says what happened', async () => {
  await page.goto(`${sluice.url}/sources`);
  await page.getByLabel('Name').evaluate((el) => { el.removeAttribute('maxlength'); });
  await put(page.getByLabel('Name'), 'n'.repeat(70 * 1024));
  await page.getByRole('button', { name: 'Create source' }).click();
  await page.getByText(/This form came to more than 64 KiB, so nothing was saved/).waitFor();
  const sources = await sluice.admin('GET', '/api/v1/sources');
  assert.equal(sources.data.length, 1);
});

test('a URL row shows every error: a bad scheme and a refused header together', async () => {
  await page.goto(`${sluice.url}/destinations/new`);
  await page.getByLabel('Name').fill('Two errors');
  await page.getByLabel('URL 1', { exact: true }).fill('ftp://example.com/hook');
  await page.getByLabel('Headers for URL 1 (optional)').fill('X-Signature: mine');
  await page.getByRole('button', { name: 'Save destination' }).click();
  await page.locator('#url0-error').waitFor();
  assert.equal(await page.locator('#url0-error').textContent(), 'URL 1: must use the http or https protocol');
  assert.equal(
    await page.locator('#headers0-error').textContent(),
    'Headers for URL 1, X-Signature: is set by Sluice and cannot be overridden',
  );
  assert.equal(await page.locator('#errors li').count(), 2);
});
