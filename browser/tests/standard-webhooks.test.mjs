// Standard Webhooks signatures on real deliveries from the real server,
// verified with the official `standardwebhooks` package (no browser needed).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { startReceiver } from '../lib/receiver.mjs';
import { startSluice } from '../lib/sluice.mjs';

let sluice;
let rx;
let source;
before(async () => {
  // Short backoff so the retry test's second attempt comes quickly.
  sluice = await startSluice({ SLUICE_DELIVERY__BACKOFF_BASE_MS: '200' });
  rx = await startReceiver('unused-x-signature-secret');
  source = await sluice.admin('POST', '/api/v1/sources', { name: 'web' });
});
after(async () => {
  await rx?.close();
  await sluice?.stop();
});

async function track(messageId) {
  const res = await fetch(`${sluice.url}/v1/track`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${source.write_key}:`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ userId: 'u-1', event: 'Signed', messageId }),
  });
  assert.equal(res.status, 200);
}

async function destination(path, standardWebhooks) {
  return sluice.admin('POST', '/api/v1/destinations', {
    name: path,
    source_ids: [source.id],
    settings: { urls: [`${rx.url}${path}`], standardWebhooks },
  });
}

/** The official verifier's answer: the parsed payload, or the thrown error. */
function verify(secret, req) {
  try {
    return new Webhook(secret).verify(req.raw, req.headers);
  } catch (e) {
    return e;
  }
}

test('a generated secret is shown once and verifies a delivery with the official package', async () => {
  const dest = await destination('/generated', { secret: 'generate' });
  const secret = dest.settings.standardWebhooks.secret;
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  const shown = await sluice.admin('GET', `/api/v1/destinations/${dest.id}`);
  assert.notEqual(shown.settings.standardWebhooks.secret, secret, 'never shown again in full');
  assert.ok(secret.startsWith(shown.settings.standardWebhooks.secret.replace('…', '')));

  await track('m-sw-1');
  const req = await rx.waitFor((r) => r.path === '/generated' && r.json?.messageId === 'm-sw-1');
  assert.match(req.headers['webhook-id'], /^msg_[0-9a-f]{32}$/);
  assert.match(req.headers['webhook-signature'], /^v1,[A-Za-z0-9+/=]+$/);
  const payload = verify(secret, req);
  assert.equal(payload.messageId, 'm-sw-1', String(payload));
  // X-Signature stays: the destination has no shared secret, so none is sent.
  assert.equal(req.headers['x-signature'], undefined);

  const other = new Webhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
  assert.throws(() => other.verify(req.raw, req.headers));
  const tampered = { ...req.headers, 'webhook-id': 'msg_other' };
  assert.ok(verify(secret, { raw: req.raw, headers: tampered }) instanceof Error);
});

test('during a rotation both the old and the new secret verify; after it only the new one', async () => {
  const dest = await destination('/rotating', { secret: 'generate' });
  const oldSecret = dest.settings.standardWebhooks.secret;
  const rotated = await sluice.admin('PATCH', `/api/v1/destinations/${dest.id}`, {
    settings: { standardWebhooks: { secret: 'generate', rotationOverlapSeconds: 3600 } },
  });
  const newSecret = rotated.settings.standardWebhooks.secret;
  assert.notEqual(newSecret, oldSecret);
  assert.ok(rotated.settings.standardWebhooks.previousSecretValidUntil);

  await track('m-sw-rot');
  const during = await rx.waitFor((r) => r.path === '/rotating' && r.json?.messageId === 'm-sw-rot');
  assert.equal(during.headers['webhook-signature'].split(' ').length, 2);
  assert.equal(verify(newSecret, during).messageId, 'm-sw-rot');
  assert.equal(verify(oldSecret, during).messageId, 'm-sw-rot');

  // A rotation with no overlap drops the old secret at once.
  const abrupt = await sluice.admin('PATCH', `/api/v1/destinations/${dest.id}`, {
    settings: { standardWebhooks: { secret: 'generate', rotationOverlapSeconds: 0 } },
  });
  const latest = abrupt.settings.standardWebhooks.secret;
  await track('m-sw-after');
  const after = await rx.waitFor((r) => r.path === '/rotating' && r.json?.messageId === 'm-sw-after');
  assert.equal(after.headers['webhook-signature'].split(' ').length, 1);
  assert.equal(verify(latest, after).messageId, 'm-sw-after');
  assert.ok(verify(newSecret, after) instanceof Error);
});

test('webhook-id is the same on every retry of one delivery', async () => {
  const dest = await destination('/retried', { secret: 'generate' });
  const secret = dest.settings.standardWebhooks.secret;
  rx.state.failing = true;
  await track('m-sw-retry');
  const first = await rx.waitFor((r) => r.path === '/retried' && r.json?.messageId === 'm-sw-retry');
  rx.state.failing = false;
  const second = await rx.waitFor(
    (r) => r.path === '/retried' && r.json?.messageId === 'm-sw-retry' && r !== first && !r.failed,
  );
  assert.equal(second.headers['webhook-id'], first.headers['webhook-id']);
  assert.equal(verify(secret, first).messageId, 'm-sw-retry');
  assert.equal(verify(secret, second).messageId, 'm-sw-retry');
});
