// Debian's Chromium for the browser suites (tests/wasm, tests/web,
// tests/edge): where it is, whether it is there (with CI=true a missing
// Chromium is an error, never a skip), and the options every suite
// launches it with (playwright-core's launch and launchPersistentContext).
import { existsSync } from 'node:fs';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI === 'true') throw new Error(`${CHROMIUM} is required with CI=true`);

/** Headless, no sandbox (containers), nothing of its own on the network. */
export const chromiumOptions = {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
};
