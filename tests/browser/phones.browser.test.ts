/**
 * The dashboard on a phone (390 × 844 px, an iPhone 12–15's CSS viewport) in a real browser
 * (Debian's Chromium via playwright-core) against the real ledger, admin, proxy and the local
 * payment provider, with rows in the tables (a project with usage, a paid and invoiced top-up,
 * members and invitations). For an owner, a developer, a viewer and a platform admin, every page
 * their navigation lists (pages added later are found the same way) and every platform section
 * (and a gateway model's upstream deployments with the form that adds one):
 * nothing scrolls sideways, every navigation entry can be reached, and every button and link in
 * the page (Create, Rotate, Budget, Buy, Download, Invite…) lies within the screen's width once
 * scrolled into view. Dark mode (prefers-color-scheme: dark) is checked on the overview.
 * Screenshots (tests/browser/support/screenshots.ts): members-mobile, billing-mobile, overview-dark.
 */
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import { startPaymentsStack, type PaymentsStack } from './support/payments-stack.ts';
import { openScreenshotAlbum, type ScreenshotAlbum } from './support/screenshots.ts';
import { acceptLink } from './support/person-pages.ts';
import { uiTimeout, waitForValue } from './support/page-waits.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();

/** The phone's viewport, CSS px. */
const phone = { width: 390, height: 844 } as const;
/** The package on sale: ₹1,180.00 including GST for ₹1,000 of credit. */
const pack = { name: 'Starter', pricePaise: 118_000n, creditMicros: 1_000_000_000n } as const;

/** What a page shows at phone width: its document width and the controls that stick out of the screen. */
interface PhoneFit {
  scrollWidth: number;
  outside: string[];
}

describe.skipIf(!serverUrl || browserMissing !== undefined)('the dashboard on a 390 px phone', () => {
  let stack: PaymentsStack;
  let browser: Browser;
  let album: ScreenshotAlbum;
  const contexts: BrowserContext[] = [];
  const pages: Record<'owner' | 'developer' | 'viewer' | 'platform', Page | undefined> = { owner: undefined, developer: undefined, viewer: undefined, platform: undefined };
  let organisationId = '';

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);

  /** A person's page in a phone-sized context of their own. */
  async function phonePage(): Promise<Page> {
    const context = await browser.newContext({
      baseURL: stack.origin, viewport: phone, deviceScaleFactor: 1, isMobile: true, hasTouch: true,
      timezoneId: 'Asia/Kolkata', locale: 'en-IN', reducedMotion: 'reduce',
    });
    context.setDefaultTimeout(uiTimeout);
    contexts.push(context);
    return context.newPage();
  }

  /** Waits until the page has loaded what it shows: no "Loading…" or "Checking…" left in main. */
  async function settled(page: Page): Promise<void> {
    const loading = page.locator('main').getByText(/Loading…|Checking the payment…/);
    await expect.poll(() => loading.count(), { timeout: uiTimeout }).toBe(0);
  }

  /**
   * The document's width and every visible button, link, input and select of the page that does
   * not lie within 0..390 px once scrolled into view (named by its accessible text).
   */
  async function phoneFit(page: Page): Promise<PhoneFit> {
    const controls = page.locator('main button, main a[href], main input, main select, main textarea, header button, header select');
    const outside: string[] = [];
    for (const control of await controls.all()) {
      if (!(await control.isVisible())) continue;
      await control.scrollIntoViewIfNeeded();
      const box = await control.boundingBox();
      if (box === null) continue;
      if (box.x < 0 || box.x + box.width > phone.width + 0.5) {
        const name = (await control.getAttribute('aria-label')) ?? (await control.textContent())?.trim() ?? '';
        outside.push(`${name || (await control.evaluate((element) => element.outerHTML.slice(0, 80)))} at x=${box.x.toFixed(0)}..${(box.x + box.width).toFixed(0)}`);
      }
    }
    const scrollWidth = await page.evaluate<number>('document.documentElement.scrollWidth');
    return { scrollWidth, outside };
  }

  /** Asserts the page fits the phone: nothing scrolls sideways, no control sticks out. */
  async function expectFits(page: Page, where: string): Promise<void> {
    const fit = await phoneFit(page);
    expect({ where, ...fit }).toEqual({ where, scrollWidth: expect.any(Number), outside: [] });
    expect(fit.scrollWidth, `${where}: document width`).toBeLessThanOrEqual(phone.width);
  }

  /** The main navigation's entries: name and hash path. */
  async function navigationEntries(page: Page, navigation: Locator): Promise<Array<{ name: string; href: string }>> {
    await navigation.waitFor();
    return navigation.getByRole('link').evaluateAll((links) => links.map((link) => ({ name: link.textContent?.trim() ?? '', href: link.getAttribute('href') ?? '' })));
  }

  /**
   * Visits every page the main navigation lists, by clicking its entry as a person would (the entry
   * must be visible and within the screen), and every platform section; checks each fits.
   * `checks` adds a page's own waits (rows that must be there) by navigation name.
   */
  async function visitEveryPage(page: Page, who: string, checks: Record<string, (page: Page) => Promise<void>> = {}): Promise<string[]> {
    const main = page.getByRole('navigation', { name: /^main$/i });
    const entries = await navigationEntries(page, main);
    expect(entries.length).toBeGreaterThan(0);
    const visited: string[] = [];
    for (const entry of entries) {
      const link = main.getByRole('link', { name: entry.name, exact: true });
      await link.scrollIntoViewIfNeeded();
      expect(await link.isVisible(), `${who}: navigation entry ${entry.name} visible`).toBe(true);
      const box = (await link.boundingBox())!;
      expect(box.x >= 0 && box.x + box.width <= phone.width, `${who}: navigation entry ${entry.name} within the screen (x=${box.x}..${box.x + box.width})`).toBe(true);
      await link.click();
      await page.waitForURL((url) => url.hash.startsWith(entry.href));
      await page.getByRole('heading', { level: 1 }).waitFor();
      await settled(page);
      await checks[entry.name]?.(page);
      await expectFits(page, `${who} ${entry.name}`);
      visited.push(entry.name);

      const sections = page.getByRole('navigation', { name: /sections$/i });
      if (await sections.count() > 0) {
        for (const section of await navigationEntries(page, sections)) {
          const tab = sections.getByRole('link', { name: section.name, exact: true });
          await tab.scrollIntoViewIfNeeded();
          const tabBox = (await tab.boundingBox())!;
          expect(tabBox.x >= 0 && tabBox.x + tabBox.width <= phone.width, `${who}: section ${section.name} within the screen`).toBe(true);
          await tab.click();
          await page.waitForURL((url) => url.hash === section.href);
          await settled(page);
          await expectFits(page, `${who} ${entry.name} › ${section.name}`);
          visited.push(`${entry.name} › ${section.name}`);
        }
      }
    }
    return visited;
  }

  /** Asserts a control is on screen horizontally once scrolled into view (a page's main action). */
  async function expectReachable(control: Locator, what: string): Promise<void> {
    await control.scrollIntoViewIfNeeded();
    expect(await control.isVisible(), `${what} visible`).toBe(true);
    const box = (await control.boundingBox())!;
    expect(box.x >= 0 && box.x + box.width <= phone.width && box.y >= 0 && box.y + box.height <= phone.height, `${what} in the viewport: ${JSON.stringify(box)}`).toBe(true);
  }

  beforeAll(async () => {
    [stack, browser, album] = await Promise.all([startPaymentsStack(serverUrl!), launchChromium(), openScreenshotAlbum()]);
    organisationId = stack.gateway.organisationId;
    // Rows for the tables: usage of the stack's project, a package on sale, the billing profile.
    await stack.gateway.client().chat.completions.create({ model: stack.gateway.modelSlug, messages: [{ role: 'user', content: 'Hello [[fake:reply_words=5]]' }] });
    await admin('POST', '/topup-packages', { name: pack.name, price_paise: pack.pricePaise.toString(), credit_micros: pack.creditMicros.toString(), sort_order: 1 });
    await admin('PUT', `/organisations/${organisationId}/billing-profile`, {
      legal_name: 'Asha Traders LLP', address: '4 Residency Road\nBengaluru 560025', state_code: '29', gstin: '29AAGCA1234R1ZB',
    });
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  it('an owner buys credit on the phone: Buy is reachable and the paid top-up\'s card names its package', async () => {
    const invitation = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'asha.owner@example.test', role: 'owner' });
    const page = pages.owner = await phonePage();
    await page.goto(invitation.link as string);
    await page.getByLabel(/^new password$/i).waitFor();
    await expectFits(page, 'link page');
    await acceptLink(page, invitation.link as string, 'Asha Rao');
    await page.goto('/#/billing');
    const buy = page.getByRole('button', { name: `Buy ${pack.name}` });
    await expect.poll(() => buy.isEnabled()).toBe(true);
    await expectReachable(buy, 'Buy');
    await buy.click();
    await page.waitForURL((url) => url.origin === new URL(stack.payments.url).origin);
    await page.getByRole('button', { name: 'Pay ₹1,180.00' }).click();
    await page.waitForURL((url) => url.origin === stack.origin && url.hash.startsWith('#/billing'));
    await page.getByRole('heading', { level: 2, name: /^Top-up: Starter \(₹1,000\.00 credit\)$/ }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Payment received' }).waitFor();
    // The invoice is issued after the credit: wait for it so Download has a row.
    await waitForValue(async () => {
      const list = await admin('GET', `/organisations/${organisationId}/topups`);
      return (list.data as Array<{ state: string }>).some((topUp) => topUp.state === 'invoiced') ? true : undefined;
    });
    // The billing profile's address keeps its lines.
    const address = page.locator('.address');
    await address.waitFor();
    expect((await address.innerText()).split('\n')).toEqual(['4 Residency Road', 'Bengaluru 560025']);
  });

  it('an owner reaches every page and its main actions at 390 px (members-mobile, billing-mobile)', async () => {
    const page = pages.owner!;
    await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'dev.developer@example.test', role: 'developer' });
    const visited = await visitEveryPage(page, 'owner', {
      Projects: async (p) => {
        const row = p.getByRole('table', { name: /projects/i }).getByRole('row').filter({ hasText: 'e2e' });
        await row.waitFor();
        await expectReachable(p.getByRole('button', { name: /^(new project|create project)$/i }).first(), 'New project');
        await expectReachable(row.getByRole('button', { name: /^rotate/i }).first(), 'Rotate');
        await expectReachable(row.getByRole('button', { name: 'Budget of e2e' }), 'Budget');
        // A dialog fits the phone too: its fields and buttons are on screen.
        await row.getByRole('button', { name: 'Budget of e2e' }).click();
        const dialog = p.getByRole('dialog');
        await dialog.waitFor();
        for (const control of await dialog.locator('button, input, select').all()) {
          if (await control.isVisible()) await expectReachable(control, 'budget dialog control');
        }
        await p.keyboard.press('Escape');
        await dialog.waitFor({ state: 'hidden' });
      },
      Usage: async (p) => {
        // The model filter is a list of the organisation's models.
        const model = p.getByLabel('Model', { exact: true });
        expect(await model.evaluate((element) => element.tagName)).toBe('SELECT');
        await model.locator('option', { hasText: stack.gateway.modelSlug }).waitFor({ state: 'attached' });
      },
      Members: async (p) => {
        await p.getByRole('table', { name: /invitations/i }).getByRole('row').filter({ hasText: 'dev.developer@example.test' }).waitFor();
        await expectReachable(p.getByRole('button', { name: /^invite$/i }), 'Invite');
        await album.take(p, 'members-mobile');
      },
      Billing: async (p) => {
        await p.getByRole('table', { name: /top-ups/i }).getByRole('row').filter({ hasText: 'Credited and invoiced' }).waitFor();
        await expectReachable(p.getByRole('button', { name: `Buy ${pack.name}` }), 'Buy');
        await album.take(p, 'billing-mobile');
      },
      Invoices: async (p) => {
        const download = p.getByRole('link', { name: /^download .* \(pdf\)$/i }).first();
        await download.waitFor();
        await expectReachable(download, 'Download');
      },
    });
    expect(visited).toEqual(expect.arrayContaining(['Overview', 'Projects', 'Usage', 'Alerts', 'Members', 'Billing', 'Invoices']));
  });

  it('a developer and a viewer reach every page they may open at 390 px', async () => {
    for (const role of ['developer', 'viewer'] as const) {
      const invitation = await admin('POST', `/organisations/${organisationId}/invitations`, { email: `${role}.phone@example.test`, role });
      const page = pages[role] = await phonePage();
      await acceptLink(page, invitation.link as string, `${role} on a phone`);
      const visited = await visitEveryPage(page, role);
      expect(visited).toEqual(expect.arrayContaining(['Overview', 'Usage']));
    }
  });

  it('a platform admin reaches every page and every platform section at 390 px', async () => {
    const created = await admin('POST', '/people', { email: 'priya.platform@example.test', platform_admin: true });
    const page = pages.platform = await phonePage();
    await acceptLink(page, created.link as string, 'Priya Nair');
    const visited = await visitEveryPage(page, 'platform admin');
    expect(visited).toEqual(expect.arrayContaining(['Platform', 'Analytics']));
    expect(visited.filter((name) => name.startsWith('Platform › ')).length).toBeGreaterThan(1);

    // A view no navigation lists: a gateway model's upstream deployments, and the form that adds one.
    await page.goto('/#/platform?tab=models');
    await settled(page);
    await page.getByRole('button', { name: `Deployments of ${stack.gateway.modelSlug}` }).click();
    await page.getByRole('table', { name: `Upstream deployments of ${stack.gateway.modelSlug}` }).getByText('primary', { exact: true }).waitFor();
    await expectFits(page, 'platform admin Platform › Gateway models › Deployments');
    await expectReachable(page.getByRole('button', { name: 'Add deployment' }), 'Add deployment');
    await page.getByRole('button', { name: 'Add deployment' }).click();
    await page.getByRole('form', { name: 'Deployment' }).waitFor();
    await expectFits(page, 'platform admin Platform › Gateway models › New deployment');
  }, 60_000);

  it('signed out, the sign-in form fits the phone', async () => {
    const page = await phonePage();
    await page.goto('/');
    await page.getByRole('button', { name: /sign in/i }).waitFor();
    await expectFits(page, 'sign-in');
  });

  it('in dark mode the overview has a dark background and light text (overview-dark)', async () => {
    const page = pages.owner!;
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.goto('/#/overview');
    await page.getByRole('heading', { level: 1 }).waitFor();
    await settled(page);
    // Relative luminance (WCAG) of the root's background and the heading's text, computed in the page.
    const colours = await page.evaluate<{ background: number; text: number }>(`(() => {
      const luminance = (colour) => {
        const [r, g, b] = (colour.match(/[\\d.]+/g) ?? []).slice(0, 3).map(Number).map((c) => {
          const s = c / 255;
          return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      return {
        background: luminance(getComputedStyle(document.documentElement).backgroundColor),
        text: luminance(getComputedStyle(document.querySelector('h1')).color),
      };
    })()`);
    expect(colours.background).toBeLessThan(0.05);
    expect(colours.text).toBeGreaterThan(0.6);
    // AA contrast of the page's text on its background: (L1 + 0.05) / (L2 + 0.05) ≥ 4.5.
    expect((colours.text + 0.05) / (colours.background + 0.05)).toBeGreaterThan(4.5);
    await expectFits(page, 'overview (dark)');
    await album.take(page, 'overview-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });
});
