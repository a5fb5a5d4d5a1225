// The browser library's settings endpoint, fetched by a real browser.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch } from '../lib/browser.mjs';
import { startSluice } from '../lib/sluice.mjs';

let sluice;
let browser;
before(async () => {
  sluice = await startSluice();
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await sluice?.stop();
});

test('a browser reads a source settings document with the Segment.io integration', async () => {
  const source = await sluice.admin('POST', '/api/v1/sources', { name: 'web' });
  const page = await browser.newPage();
  const res = await page.goto(`${sluice.url}/v1/projects/${source.write_key}/settings`);
  assert.equal(res.status(), 200);
  const settings = JSON.parse(await res.text());
  assert.equal(settings.integrations['Segment.io'].apiKey, source.write_key);
});
