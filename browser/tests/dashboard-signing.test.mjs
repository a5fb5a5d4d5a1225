// The destination form's opt-ins in a real browser: Standard Webhooks
// signing (a generated secret shown once, then a rotation) and a private CA
// bundle, with deliveries verified by the official `standardwebhooks`
// package at a real receiver.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { launch } from '../lib/browser.mjs';
import { startReceiver } from '../lib/receiver.mjs';
import { startSluice } from '../lib/sluice.mjs';

let sluice;
let browser;
let receiver;
let page;
const state = { writeKey: '', destinationId: '', secret: '', ca: '' };

/** A self-signed CA certificate in PEM, made with the system's openssl. */
function caPem() {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-ca-'));
  try {
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'ca.pem'), '-days', '2',
      '-subj', '/CN=Sluice Test CA', '-addext', 'basicConstraints=critical,CA:TRUE',
    ], { stdio: 'ignore' });
    return readFileSync(join(dir, 'ca.pem'), 'utf8').trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

before(async () => {
  receiver = await startReceiver('unused-x-signature-secret');
  sluice = await startSluice();
  const source = await sluice.admin('POST', '/api/v1/sources', { name: 'web' });
  state.writeKey = source.write_key;
  state.ca = caPem();
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
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

async function track(messageId) {
  const res = await fetch(`${sluice.url}/v1/track`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${state.writeKey}:`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ userId: 'u1', event: 'Signed In Form', messageId }),
  });
  assert.equal(res.status, 200);
}

const verify = (secret, req) => new Webhook(secret).verify(req.raw, req.headers);

test('Standard Webhooks signing and a CA bundle set on the new destination form; the secret is shown once and verifies', async () => {
  await page.goto(`${sluice.url}/destinations/new`);
  await page.getByLabel('Name').fill('Signed hooks');
  await page.getByLabel('URL 1', { exact: true }).fill(`${receiver.url}/sw`);
  await page.getByLabel('Sign with Standard Webhooks').check();
  await page.getByLabel('CA certificates (PEM)').fill(state.ca);
  await page.getByRole('button', { name: 'Save destination' }).click();
  await page.getByText('it is shown only once').waitFor();
  state.secret = (await page.locator('#standard-secret').textContent()).trim();
  assert.match(state.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  await page.getByRole('link', { name: 'Continue to the destination' }).click();
  await page.waitForURL(/\/destinations\/dst_[A-Za-z0-9]+\?created=1$/);
  state.destinationId = new URL(page.url()).pathname.split('/').pop();
  await page.locator('#standard-webhooks').waitFor();
  await page.locator('#ca-bundle').waitFor();
  assert.equal(await page.getByText(state.secret).count(), 0, 'not shown again');

  const dest = await sluice.admin('GET', `/api/v1/destinations/${state.destinationId}`);
  assert.ok(state.secret.startsWith(dest.settings.standardWebhooks.secret.replace('…', '')));
  assert.equal(dest.settings.caBundle.trim(), state.ca);

  await page.getByRole('button', { name: 'Switch on' }).click();
  await page.getByRole('button', { name: 'Switch off' }).waitFor();
  await track('m-form-sw');
  const req = await receiver.waitFor((r) => r.path === '/sw' && r.json?.messageId === 'm-form-sw');
  assert.equal(verify(state.secret, req).messageId, 'm-form-sw');
});

test('a new secret typed on the edit form rotates: both verify during the overlap', async () => {
  const next = `whsec_${randomBytes(24).toString('base64')}`;
  await page.goto(`${sluice.url}/destinations/${state.destinationId}/edit`);
  assert.ok(await page.getByLabel('Sign with Standard Webhooks').isChecked());
  assert.equal(await page.getByLabel('Standard Webhooks secret').inputValue(), '');
  assert.equal((await page.getByLabel('CA certificates (PEM)').inputValue()).trim(), state.ca);
  await page.getByLabel('Standard Webhooks secret').fill(next);
  await page.getByLabel('Old secret keeps signing for (hours)').fill('2');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText('Settings saved.').waitFor();
  assert.match(await page.locator('#standard-webhooks').textContent(), /previous secret also signs until/);
  const dest = await sluice.admin('GET', `/api/v1/destinations/${state.destinationId}`);
  const until = Date.parse(dest.settings.standardWebhooks.previousSecretValidUntil);
  assert.ok(Math.abs(until - Date.now() - 2 * 3600_000) < 120_000, dest.settings.standardWebhooks.previousSecretValidUntil);

  await track('m-form-rot');
  const req = await receiver.waitFor((r) => r.path === '/sw' && r.json?.messageId === 'm-form-rot');
  assert.equal(verify(next, req).messageId, 'm-form-rot');
  assert.equal(verify(state.secret, req).messageId, 'm-form-rot');
});

test('a CA bundle that is not PEM is refused on its field, the form still filled; unticking turns signing off', async () => {
  await page.goto(`${sluice.url}/destinations/${state.destinationId}/edit`);
  await page.getByLabel('CA certificates (PEM)').fill('not a certificate');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.locator('#ca_bundle-error').waitFor();
  assert.match(await page.locator('#ca_bundle-error').textContent(), /^CA certificates: /);
  assert.equal(await page.getByLabel('CA certificates (PEM)').inputValue(), 'not a certificate');
  await page.getByLabel('CA certificates (PEM)').fill('');
  await page.getByLabel('Sign with Standard Webhooks').uncheck();
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText('Settings saved.').waitFor();
  const dest = await sluice.admin('GET', `/api/v1/destinations/${state.destinationId}`);
  assert.equal(dest.settings.standardWebhooks, null);
  assert.equal(dest.settings.caBundle, null);
});
