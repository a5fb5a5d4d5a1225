// A webhook receiver for browser tests: a real HTTP server on 127.0.0.1 that
// records every request and checks X-Signature (hex HMAC-SHA1 of the raw body
// keyed with the shared secret). `failing = true` makes it answer 503.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

export async function startReceiver(secret) {
  const received = [];
  const state = { failing: false, pages: new Map() };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const page = state.pages.get(req.url);
      if (req.method === 'GET' && page) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(page);
        return;
      }
      const body = Buffer.concat(chunks);
      const expected = createHmac('sha1', secret).update(body).digest('hex');
      const got = String(req.headers['x-signature'] ?? '');
      const signed = got.length === expected.length
        && timingSafeEqual(Buffer.from(got), Buffer.from(expected));
      let json;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        json = undefined;
      }
      received.push({
        path: req.url, headers: req.headers, raw: body.toString('utf8'), json, signed, failed: state.failing,
      });
      res.writeHead(state.failing ? 503 : 200, { 'content-type': 'text/plain' });
      res.end(state.failing ? 'receiver is failing on purpose' : 'ok');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    received,
    state,
    /** Resolves with the first recorded request matching `pred`. */
    async waitFor(pred, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const hit = received.find(pred);
        if (hit) return hit;
        if (Date.now() > deadline) throw new Error('receiver: no matching request arrived');
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => new Promise((r) => server.close(r)),
  };
}
