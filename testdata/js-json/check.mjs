// Checks the shared vectors against the JavaScript engine itself.
//
// testdata/js-json/vectors.json pins the exact body Sluice sends for a given
// input. A receiver verifying JSON.stringify(JSON.parse(body)) only agrees
// with our signature if that round trip is the identity on the body, so:
//   - every `expected` must be a fixed point of stringify∘parse;
//   - unless `normalized` (the input held lone surrogate escapes, which
//     Sluice replaces with U+FFFD before parsing), stringify(parse(input))
//     must equal `expected` exactly.
// testdata/signatures/vectors.json is checked with node's own HMAC-SHA1.
//
// Usage: node testdata/js-json/check.mjs   (Node 18+, standard library only)
// Last line: "N passed, M failed"; exit status 1 on any failure.

import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const testdata = fileURLToPath(new URL('..', import.meta.url));
let passed = 0;
let failed = 0;

function check(label, actual, expected) {
  if (actual === expected) {
    passed += 1;
  } else {
    failed += 1;
    console.log(`FAIL ${label}\n  expected: ${JSON.stringify(expected)}\n  actual:   ${JSON.stringify(actual)}`);
  }
}

function roundTrip(text) {
  try {
    return JSON.stringify(JSON.parse(text));
  } catch (err) {
    return `<${err.message}>`;
  }
}

function load(relative) {
  const vectors = JSON.parse(readFileSync(testdata + relative, 'utf8'));
  if (!Array.isArray(vectors) || vectors.length === 0) {
    throw new Error(`${relative}: expected a non-empty array`);
  }
  return vectors;
}

const names = new Set();
for (const { name, input, expected, normalized = false } of load('js-json/vectors.json')) {
  check(`js-json "${name}": name is unique`, names.has(name), false);
  names.add(name);
  check(`js-json "${name}": expected is a fixed point`, roundTrip(expected), expected);
  if (normalized) {
    // Sanity: a normalized vector must really differ from the raw round trip
    // (JavaScript keeps the lone surrogate and escapes it as \udxxx).
    check(`js-json "${name}": input needs normalization`, roundTrip(input) === expected, false);
  } else {
    check(`js-json "${name}": stringify(parse(input))`, roundTrip(input), expected);
  }
}

for (const [i, { secret, body, signature }] of load('signatures/vectors.json').entries()) {
  const actual = createHmac('sha1', Buffer.from(secret, 'utf8')).update(Buffer.from(body, 'utf8')).digest('hex');
  check(`signatures[${i}]`, actual, signature);
}

console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed === 0 ? 0 : 1;
