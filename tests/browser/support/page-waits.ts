import type { Locator, Page } from 'playwright-core';

/** How long a page may take to show a state, ms (live updates poll every 100–200 ms in the browser stacks). */
export const uiTimeout = 15_000;

/** Polls `read` until it gives a value (not undefined), for at most uiTimeout; the value or a failure. */
export async function waitForValue<T>(read: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + uiTimeout;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`no value within ${uiTimeout} ms: ${read.toString()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Waits until a locator's text is exactly `text` (live updates change it in place); fails naming what the page shows. */
export async function waitForExactText(locator: Locator, text: string): Promise<void> {
  try {
    await waitForValue(async () => ((await locator.textContent({ timeout: 1000 }).catch(() => null))?.trim() === text ? true : undefined));
  } catch {
    throw new Error(`expected "${text}", the page shows "${await locator.textContent({ timeout: 1000 }).catch(() => '(nothing)')}"`);
  }
}

/** The figure of a statistic on a page: the definition (dd) after its term (dt). */
export function statFigure(page: Page, term: string): Locator {
  return page.getByRole('term').filter({ hasText: new RegExp(`^${term}$`) }).locator('xpath=following-sibling::dd[1]');
}
