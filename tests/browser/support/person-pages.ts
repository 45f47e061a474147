import type { Browser, BrowserContext, Page } from 'playwright-core';
import { uiTimeout } from './page-waits.ts';

/** The password every person of the browser tests sets when accepting a link. */
const personPassword = 'correct horse battery staple';

/** A page in a context of its own (one person: own cookies), in India's time zone and locale; the context is pushed on `contexts` for closing. */
export async function newPersonPage(browser: Browser, origin: string, contexts: BrowserContext[]): Promise<Page> {
  const context = await browser.newContext({ baseURL: origin, viewport: { width: 1280, height: 900 }, timezoneId: 'Asia/Kolkata', locale: 'en-IN' });
  context.setDefaultTimeout(uiTimeout);
  contexts.push(context);
  return context.newPage();
}

/** Opens a link (invitation or setup), sets name and password, and waits for the signed-in shell. */
export async function acceptLink(page: Page, link: string, name: string): Promise<void> {
  await page.goto(link);
  await page.getByLabel(/your name/i).fill(name);
  await page.getByLabel(/^new password$/i).fill(personPassword);
  await page.getByLabel(/^repeat the password$/i).fill(personPassword);
  await page.getByRole('button', { name: /save and sign in/i }).click();
  await page.getByRole('navigation', { name: /main/i }).waitFor();
}
