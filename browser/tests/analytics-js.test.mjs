// analytics.js (the npm package @segment/analytics-next), loaded in headless
// Chromium from a static server on loopback, takes its settings only from
// Sluice (`cdnURL`): its calls must arrive in Sluice over plain http, which
// needs the `protocol` in the settings document (analytics.js assumes https
// without it).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, normalize } from 'node:path';
import { launch } from '../lib/browser.mjs';
import { startSluice } from '../lib/sluice.mjs';

const require = createRequire(import.meta.url);
const UMD = join(
  dirname(require.resolve('@segment/analytics-next/package.json')),
  'dist',
  'umd',
);

const PAGE = `<!doctype html><html><head><title>shop</title>
<script src="/umd/index.js"></script></head><body>shop</body></html>`;

/** Serves the test page and the analytics.js UMD files on 127.0.0.1. */
function startStatic() {
  const server = createServer(async (req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (path === '/' || path === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(PAGE);
      return;
    }
    const name = normalize(path).replace(/^\/(umd|analytics-next\/bundles)\//, '');
    if (name === path || name.includes('..')) {
      res.writeHead(404).end();
      return;
    }
    try {
      const body = await readFile(join(UMD, name));
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() });
    });
  });
}

let sluice;
let site;
let browser;
before(async () => {
  sluice = await startSluice();
  site = await startStatic();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  site?.close();
  await sluice?.stop();
});

async function storedEvents(sourceId) {
  const body = await sluice.admin('GET', `/api/v1/sources/${sourceId}/events?limit=50`);
  return body.data;
}

test('analytics.js with settings served by Sluice sends its calls to Sluice over http', async () => {
  const source = await sluice.admin('POST', '/api/v1/sources', { name: 'web' });
  const page = await browser.newPage();
  // Lazily loaded chunks of the library come from its own files, wherever
  // the library looks for them; the settings document comes from Sluice.
  await page.route('**/analytics-next/bundles/**', async (route) => {
    const file = new URL(route.request().url()).pathname.split('/').pop();
    try {
      route.fulfill({ body: await readFile(join(UMD, file)), contentType: 'text/javascript' });
    } catch {
      route.fulfill({ status: 404 });
    }
  });
  const settingsFetched = page.waitForResponse((r) =>
    r.url().startsWith(`${sluice.url}/v1/projects/${source.write_key}/settings`),
  );
  await page.goto(`${site.url}/`);
  const result = await page.evaluate(
    async ({ writeKey, cdnURL }) => {
      const { AnalyticsBrowser } = window.AnalyticsNext;
      const [analytics] = await AnalyticsBrowser.load({ writeKey, cdnURL });
      const tracked = await analytics.track('Browser Order', { total: 42 });
      await analytics.identify('browser-user-1', { plan: 'pro' });
      await analytics.page();
      return { delivered: tracked.attempts, messageId: tracked.event.messageId };
    },
    { writeKey: source.write_key, cdnURL: sluice.url },
  );
  const settings = await (await settingsFetched).json();
  assert.equal(settings.integrations['Segment.io'].protocol, 'http');

  let events = [];
  for (let i = 0; i < 50; i++) {
    events = await storedEvents(source.id);
    if (events.length >= 3) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const types = events.map((e) => e.type).sort();
  assert.deepEqual(types, ['identify', 'page', 'track'], JSON.stringify(events));
  const track = events.find((e) => e.type === 'track');
  assert.equal(track.message_id, result.messageId);
  await page.close();
});
