import puppeteer, { type Browser } from 'puppeteer-core';
import { systemBinary } from '../harness/system-package.js';

/** Installing Chromium with apt takes minutes on a bare machine: the hooks that launch it wait this long. */
export const LAUNCH_TIMEOUT_MS = 600_000;

/** Debian's chromium (CHROMIUM_PATH to use another), installed with apt when missing, as .ci/run does. */
function chromium(): string {
  return process.env['CHROMIUM_PATH'] ?? systemBinary('chromium', 'chromium', 'Chromium was not found: apt-get install -y chromium, or set CHROMIUM_PATH');
}

/** One headless Chromium for a test file. */
export async function launchChromium(): Promise<Browser> {
  const executablePath = chromium();
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
  return puppeteer.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}
