// Failed sign-ins in the audit log, in a real browser: a wrong password is
// refused, and an admin finds the attempt on the audit log page, filtered
// by the username tried, without the password typed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startSluice } from '../lib/sluice.mjs';

const PASSWORD = 'correct horse battery staple';

let sluice;
let browser;

before(async () => {
  sluice = await startSluice();
  await sluice.admin('POST', '/api/v1/users', { username: 'ada', role: 'admin', password: PASSWORD });
  await sluice.admin('POST', '/api/v1/users', { username: 'ed', role: 'editor', password: PASSWORD });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await sluice?.stop();
});

async function signIn(page, username, password) {
  await page.goto(`${sluice.url}/signin`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

test('an admin finds a failed sign-in on the audit log page, without the password typed', async () => {
  const guesser = await (await browser.newContext()).newPage();
  await signIn(guesser, 'ed', 'my wrong guess 42');
  await guesser.locator('#password-error').waitFor();

  const admin = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
  await signIn(admin, 'ada', PASSWORD);
  await admin.getByRole('heading', { name: 'Overview' }).waitFor();
  await admin.goto(`${sluice.url}/audit`);
  await admin.getByLabel('Actor').fill('ed');
  await admin.getByLabel('Actor').press('Enter');
  await admin.waitForURL(/actor=ed/);
  // The entry is written off the request: reload until it is there.
  let text = '';
  for (let i = 0; i < 20 && !/sign-in-failed/.test(text); i += 1) {
    if (i > 0) await admin.reload();
    const rows = await admin.locator('#audit tbody tr').allTextContents();
    text = rows[0] ?? '';
  }
  assert.match(text, /sign-in-failed/);
  assert.match(text, /anonymous/);
  assert.match(text, /127\.0\.0\.1/);
  assert.doesNotMatch(await admin.content(), /my wrong guess 42/);
  await guesser.context().close();
  await admin.context().close();
});
