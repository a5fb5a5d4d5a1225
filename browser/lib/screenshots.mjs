// Where the dashboard tests save their screenshots: docs/screenshots/ with
// UPDATE_SCREENSHOTS=1 (the pictures the README and docs show), otherwise a
// fresh temporary directory, so an ordinary test run changes no tracked file.

import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = process.env.UPDATE_SCREENSHOTS === '1'
  ? fileURLToPath(new URL('../../docs/screenshots/', import.meta.url))
  : `${mkdtempSync(join(tmpdir(), 'sluice-screenshots-'))}/`;
mkdirSync(dir, { recursive: true });

/** Saves a full-page screenshot of `page` as `<name>.png`. */
export const shot = (page, name) => page.screenshot({ path: `${dir}${name}.png`, fullPage: true });
