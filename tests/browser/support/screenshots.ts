/**
 * Screenshots of the dashboard's pages. Every run writes them to a temporary folder (printed once,
 * so a failing run can be looked at); with UPDATE_SCREENSHOTS=1 they are also copied into
 * docs/dashboard/, which docs/dashboard.md shows. Ordinary runs leave the committed ones alone:
 * ids, times and amounts differ on every run.
 */
import { copyFile, mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Locator, Page } from 'playwright-core';

/** Where published screenshots live: docs/dashboard/ of the repository. */
const docsFolder = fileURLToPath(new URL('../../../docs/dashboard/', import.meta.url));

/** Takes named screenshots of pages for one test file. */
export interface ScreenshotAlbum {
  /** The temporary folder this run writes to. */
  folder: string;
  /** Whether screenshots are copied into docs/dashboard/ (UPDATE_SCREENSHOTS=1). */
  publishing: boolean;
  /**
   * Saves the page (whole length) as `<name>.png`; returns the temporary file's path. `hide`
   * covers elements with a plain box: a secret shown once is a real credential of the run, and a
   * picture of it in the repository would look like a leaked key to secret scanners.
   */
  take(page: Page, name: string, hide?: Locator[]): Promise<string>;
}

/** Makes the temporary folder of this run's screenshots. */
export async function openScreenshotAlbum(): Promise<ScreenshotAlbum> {
  const folder = await mkdtemp(join(tmpdir(), 'dashboard-screenshots-'));
  const publishing = process.env.UPDATE_SCREENSHOTS === '1';
  console.info(`dashboard screenshots: ${folder}${publishing ? ' (copied into docs/dashboard/)' : ''}`);
  return {
    folder, publishing,
    async take(page, name, hide = []) {
      if (!/^[a-z0-9-]+$/.test(name)) throw new Error(`screenshot name "${name}" must be lower-case words joined by "-"`);
      const file = join(folder, `${name}.png`);
      // No caret or animation, so a published picture does not change for nothing.
      await page.screenshot({ path: file, fullPage: true, animations: 'disabled', caret: 'hide', mask: hide, maskColor: '#e3e6eb' });
      if (publishing) {
        await mkdir(docsFolder, { recursive: true });
        await copyFile(file, join(docsFolder, `${name}.png`));
      }
      return file;
    },
  };
}
