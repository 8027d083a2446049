import { existsSync } from 'node:fs';
import puppeteer, { type Browser } from 'puppeteer-core';

/** Debian's chromium (apt-get install chromium; .ci/run installs it when missing). */
export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** One headless Chromium for a test file. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
  return puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}
