// The OpenAPI document validated as OpenAPI 3.1 by a real validator
// (@seriousme/openapi-schema-validator: the official OAS 3.1 JSON Schema,
// then every $ref resolved). Both the checked-in docs/openapi.json (which the
// Rust test `openapi::checked_in_document_is_what_the_code_generates` keeps
// equal to the code's) and the document the real server serves.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { Validator } from '@seriousme/openapi-schema-validator';
import { startSluice } from '../lib/sluice.mjs';

const checkedIn = new URL('../../docs/openapi.json', import.meta.url);

let sluice;
before(async () => {
  sluice = await startSluice();
});
after(async () => {
  await sluice?.stop();
});

async function validate(doc) {
  const validator = new Validator();
  // A copy: the validator may annotate what it is given.
  const res = await validator.validate(structuredClone(doc));
  return { res, validator };
}

test('the checked-in docs/openapi.json is a valid OpenAPI 3.1 document whose refs all resolve', async () => {
  const doc = JSON.parse(await readFile(checkedIn, 'utf8'));
  const { res, validator } = await validate(doc);
  assert.ok(res.valid, JSON.stringify(res.errors, null, 1));
  assert.equal(validator.version, '3.1');
  const resolved = validator.resolveRefs();
  assert.ok(resolved.paths['/api/v1/sources'].post.responses['201'].content['application/json'].schema.properties.write_key);
  // Every $ref was replaced (the batch schema refers to itself, so walk
  // with a visited set rather than stringify).
  const seen = new Set();
  const walk = (node) => {
    if (node === null || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    assert.equal(node.$ref, undefined, `unresolved ${node.$ref}`);
    Object.values(node).forEach(walk);
  };
  walk(resolved);
});

test('the served document is valid and equal to the checked-in one', async () => {
  const served = await sluice.admin('GET', '/api/v1/openapi.json');
  const { res } = await validate(served);
  assert.ok(res.valid, JSON.stringify(res.errors, null, 1));
  assert.deepEqual(served, JSON.parse(await readFile(checkedIn, 'utf8')));
});

test('the validator refuses a broken document (so the checks above can fail)', async () => {
  const doc = JSON.parse(await readFile(checkedIn, 'utf8'));
  delete doc.paths['/api/v1/sources'].get.responses;
  doc.components.securitySchemes.adminToken.type = 'token';
  const { res } = await validate(doc);
  assert.equal(res.valid, false);
});
