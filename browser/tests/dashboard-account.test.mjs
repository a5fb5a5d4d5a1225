// A user changes their own password on the account page, in a real
// browser with JavaScript off and by keyboard alone: a wrong current
// password is refused on its field, the change signs out the user's other
// session and keeps this one.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startSluice } from '../lib/sluice.mjs';

const PASSWORD = 'correct horse battery staple';
const NEW = 'a much longer new passphrase';

let sluice;
let browser;

before(async () => {
  sluice = await startSluice();
  await sluice.admin('POST', '/api/v1/users', { username: 'vi', role: 'viewer', password: PASSWORD });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await sluice?.stop();
});

async function signedIn(username, password, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  await page.goto(`${sluice.url}/signin`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  return page;
}

test('a viewer changes their own password without JavaScript, by keyboard, and only this session stays', async () => {
  const other = await signedIn('vi', PASSWORD);
  const page = await signedIn('vi', PASSWORD, { javaScriptEnabled: false });
  await page.locator('a.account').click();
  await page.getByRole('heading', { name: 'Change your password' }).waitFor();

  // A wrong current password: refused on its field, by keyboard alone.
  await page.getByLabel('Current password').focus();
  await page.keyboard.type('not my password at all');
  await page.keyboard.press('Tab');
  await page.keyboard.type(NEW);
  await page.keyboard.press('Tab');
  await page.keyboard.type(NEW);
  // Tab went from each field to the next.
  assert.equal(await page.getByLabel('New password', { exact: true }).inputValue(), NEW);
  assert.equal(await page.getByLabel('New password again').inputValue(), NEW);
  await page.keyboard.press('Enter');
  const error = page.locator('#current_password-error');
  await error.waitFor();
  assert.match(await error.textContent(), /current_password: is not your current password/);
  assert.equal(await page.getByLabel('Current password').getAttribute('aria-invalid'), 'true');
  assert.match(await page.getByLabel('Current password').getAttribute('aria-describedby'), /current_password-error/);

  // A confirmation that differs.
  await page.getByLabel('Current password').fill(PASSWORD);
  await page.getByLabel('New password', { exact: true }).fill(NEW);
  await page.getByLabel('New password again').fill(`${NEW}!`);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.locator('#confirmation-error').waitFor();
  assert.equal(await page.getByLabel('New password again').getAttribute('aria-invalid'), 'true');

  await page.getByLabel('Current password').fill(PASSWORD);
  await page.getByLabel('New password', { exact: true }).fill(NEW);
  await page.getByLabel('New password again').focus();
  await page.keyboard.type(NEW);
  await page.keyboard.press('Enter');
  await page.getByText('Password changed. Your 1 other session was signed out.').waitFor();

  await page.goto(`${sluice.url}/sources`);
  await page.getByRole('heading', { name: 'Sources' }).waitFor();
  await other.goto(`${sluice.url}/sources`);
  await other.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
  await other.context().close();

  const again = await signedIn('vi', NEW);
  assert.match(await again.locator('a.account').textContent(), /vi \(viewer\)/);
  await again.context().close();
  await page.context().close();
});
