/**
 * The browser of the dashboard's browser tests: Debian's Chromium driven by playwright-core (no
 * browser download). Like the rest of the testkit, a missing browser fails the run under CI=true
 * and only skips (loudly) on a developer's machine.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Where the Chromium binary is: CHROMIUM_PATH, else Debian's package location. */
const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * Why the browser tests cannot run here, or undefined when they can. Under CI=true a missing
 * browser throws instead (the test file fails, it is never skipped).
 */
export function missingBrowser(): string | undefined {
  if (existsSync(chromiumPath)) return undefined;
  const reason = `no Chromium at ${chromiumPath}: install it (apt-get install chromium) or set CHROMIUM_PATH`;
  if (process.env.CI === 'true') throw new Error(`CI=true and the dashboard's browser tests have no browser: ${reason}`);
  console.warn(`\n!!! The dashboard's browser tests will be SKIPPED: ${reason}\n`);
  return reason;
}

/** Flags for a headless Chromium in a container: no sandbox (often unavailable), no GPU, nothing phoning home. */
const chromiumArgs = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

/** Starts one headless Chromium; each person of a test gets their own context of it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, args: chromiumArgs, headless: true });
}
