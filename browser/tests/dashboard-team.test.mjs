// People, roles and the audit log in a real browser: each role signs in
// with its own password and sees what its role allows; an admin adds a user
// and reads the audit log, filtered. Screenshots as in dashboard.test.mjs
// (UPDATE_SCREENSHOTS=1).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { shot } from '../lib/screenshots.mjs';
import { startSluice } from '../lib/sluice.mjs';

const PASSWORD = 'correct horse battery staple';

let sluice;
let browser;

before(async () => {
  sluice = await startSluice();
  for (const [username, role] of [['ada', 'admin'], ['ed', 'editor'], ['vi', 'viewer']]) {
    await sluice.admin('POST', '/api/v1/users', { username, role, password: PASSWORD });
  }
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await sluice?.stop();
});

/** A new page signed in as `username`, through the sign-in form. */
async function signedIn(username, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  await page.goto(`${sluice.url}/signin`);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  return page;
}

const nav = (page) => page.getByRole('navigation', { name: 'Main' });

test('a wrong password is refused on its field, and the page says nothing about the username', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${sluice.url}/signin`);
  await page.getByLabel('Username').fill('ed');
  await page.getByLabel('Password').fill('not the password at all');
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  const error = page.locator('#password-error');
  await error.waitFor();
  assert.equal(await error.textContent(), 'wrong username or password');
  assert.equal(await page.getByLabel('Password').getAttribute('aria-invalid'), 'true');
  await context.close();
});

test('an admin sees the team pages, an editor the forms, a viewer neither', async () => {
  const admin = await signedIn('ada');
  await nav(admin).getByRole('link', { name: 'Users' }).waitFor();
  await nav(admin).getByRole('link', { name: 'Audit log' }).waitFor();
  assert.match(await admin.locator('a.account').textContent(), /ada \(admin\)/);

  const editor = await signedIn('ed');
  assert.equal(await nav(editor).getByRole('link', { name: 'Users' }).count(), 0);
  assert.equal(await nav(editor).getByRole('link', { name: 'Regulations' }).count(), 0);
  await editor.goto(`${sluice.url}/sources`);
  await editor.getByRole('button', { name: 'Create source' }).waitFor();
  const refused = await editor.goto(`${sluice.url}/users`);
  assert.equal(refused.status(), 403);
  await editor.getByText('this needs the admin role; ed has the editor role').waitFor();

  const viewer = await signedIn('vi');
  await viewer.goto(`${sluice.url}/sources`);
  await viewer.getByRole('heading', { name: 'Sources' }).waitFor();
  assert.equal(await viewer.getByRole('button', { name: 'Create source' }).count(), 0, 'a viewer gets no form');
  assert.match(await viewer.locator('a.account').textContent(), /vi \(viewer\)/);
  await shot(viewer, 'sources-viewer');
  for (const page of [admin, editor, viewer]) await page.context().close();
});

test('an admin adds a user, who signs in; the audit log shows both, filtered by who', async () => {
  const admin = await signedIn('ada');
  await admin.goto(`${sluice.url}/users`);
  await admin.getByLabel('Username').fill('newbie@example.com');
  await admin.getByLabel('Role').selectOption('editor');
  await admin.getByLabel('Password').fill(PASSWORD);
  await admin.getByRole('button', { name: 'Add user' }).click();
  await admin.getByText('User added.').waitFor();
  await admin.getByRole('heading', { name: 'newbie@example.com' }).waitFor();
  await shot(admin, 'user');

  const newbie = await signedIn('newbie@example.com');
  await newbie.goto(`${sluice.url}/sources`);
  await newbie.getByLabel('Name').fill('made by newbie');
  await newbie.getByRole('button', { name: 'Create source' }).click();
  await newbie.getByText('Copy the write key now').waitFor();

  await admin.goto(`${sluice.url}/audit`);
  const rows = admin.locator('#audit tbody tr');
  await rows.first().waitFor();
  assert.match(await rows.first().textContent(), /newbie@example\.com/);
  await admin.getByLabel('Actor').fill('ada');
  await admin.getByRole('button', { name: 'Filter' }).click();
  await admin.waitForURL(/actor=ada/);
  const mine = await admin.locator('#audit tbody tr').allTextContents();
  assert.ok(mine.length >= 2, mine.join('\n'));
  assert.ok(mine.every((r) => r.includes('ada')), mine.join('\n'));
  assert.ok(mine.some((r) => /user/.test(r) && /create/.test(r)), mine.join('\n'));
  await admin.getByLabel('Actor').fill('newbie@example.com');
  await admin.getByLabel('Resource').selectOption('source');
  await admin.getByRole('button', { name: 'Filter' }).click();
  await admin.waitForURL(/resource=source/);
  const created = admin.locator('#audit tbody tr').first();
  assert.match(await created.textContent(), /dashboard/);
  await created.getByText('Changes').click();
  assert.match(await created.locator('pre').last().textContent(), /made by newbie/);
  assert.doesNotMatch(await created.textContent(), /write_key"/);
  await shot(admin, 'audit-log');
  await admin.context().close();
  await newbie.context().close();
});

test('the team pages work without JavaScript: a token is shown once, then only its hint', async () => {
  const admin = await signedIn('ada', { javaScriptEnabled: false });
  await admin.goto(`${sluice.url}/tokens`);
  await admin.getByLabel('Name').fill('deploy pipeline');
  await admin.getByLabel('Role').selectOption('editor');
  await admin.getByRole('button', { name: 'Create token' }).click();
  const token = (await admin.locator('#new-token').textContent()).trim();
  assert.match(token, /^slu_[A-Za-z0-9]{40}$/);
  const res = await fetch(`${sluice.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } });
  assert.deepEqual((await res.json()).role, 'editor');
  await admin.getByRole('link', { name: 'Back to API tokens' }).click();
  const listed = await admin.locator('#tokens').textContent();
  assert.ok(listed.includes(token.slice(0, 8)), listed);
  assert.ok(!listed.includes(token), 'the token is never listed in full');
  await admin.context().close();
});
