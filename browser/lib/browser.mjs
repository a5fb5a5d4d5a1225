// Launches the operating system's Chromium through playwright-core; no
// browser is downloaded (see ../README.md).
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';

export function launch() {
  // --no-sandbox: the tests run as root on CI machines.
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}
