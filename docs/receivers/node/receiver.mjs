// Reference webhook receiver for Sluice (Node 18+, standard library only).
//
// Verifies X-Signature = hex HMAC-SHA1(SHARED_SECRET, body) two ways and
// requires both to agree:
//   1. over the raw request bytes (recommended: independent of any JSON
//      library);
//   2. over JSON.stringify(JSON.parse(raw)), the way Segment's documentation
//      verifies `req.body` in Express. This only works because Sluice sends
//      bodies that are already in JSON.stringify form.
//
// Env: PORT (0 picks a free port), SHARED_SECRET (required).
// Answers 200 when valid, 401 when not; prints one JSON line per request:
//   {"valid":true,"messageId":"…","type":"track"}
// (messageId/type are null when the body has none). Diagnostics go to stderr.

import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

const MAX_BODY_BYTES = 1 << 20; // Sluice caps messages far below this.

const secret = process.env.SHARED_SECRET;
if (!secret) {
  console.error('SHARED_SECRET is required');
  process.exit(2);
}
const port = Number.parseInt(process.env.PORT ?? '', 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('PORT must be a port number (0 picks a free one)');
  process.exit(2);
}

function hmacHex(data) {
  return createHmac('sha1', secret).update(data).digest('hex');
}

// Constant-time comparison of two hex strings; the length is not secret.
function sameHex(expected, received) {
  const a = Buffer.from(expected, 'utf8');
  const b = Buffer.from(received.toLowerCase(), 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

function report(res, status, valid, message) {
  const line = {
    valid,
    messageId: typeof message?.messageId === 'string' ? message.messageId : null,
    type: typeof message?.type === 'string' ? message.type : null,
  };
  process.stdout.write(JSON.stringify(line) + '\n');
  res.writeHead(status, { 'Content-Type': 'text/plain' }).end(valid ? 'ok\n' : 'invalid signature\n');
}

function handle(req, raw, res) {
  const received = req.headers['x-signature'];
  let message = null;
  let reserialized = null;
  try {
    message = JSON.parse(raw.toString('utf8'));
    reserialized = JSON.stringify(message);
  } catch {
    // Not JSON: the re-serialized check cannot pass, so the request is invalid.
  }
  const rawValid = typeof received === 'string' && sameHex(hmacHex(raw), received);
  const reserializedValid =
    typeof received === 'string' && reserialized !== null && sameHex(hmacHex(reserialized), received);
  if (rawValid !== reserializedValid) {
    console.error(`raw-body check (${rawValid}) and JSON.stringify check (${reserializedValid}) disagree`);
  }
  const valid = rawValid && reserializedValid;
  report(res, valid ? 200 : 401, valid, message);
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(405, { Allow: 'POST' }).end();
    return;
  }
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.writeHead(413, { Connection: 'close' }).end();
      req.destroy();
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (!res.headersSent) handle(req, Buffer.concat(chunks), res);
  });
});

server.listen(port, '127.0.0.1', () => {
  console.error(`listening on 127.0.0.1:${server.address().port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
