/**
 * Buying credit end to end in a real browser (Debian's Chromium via playwright-core) against the
 * real ledger, admin and proxy, with the local payment provider (the stand-in for Razorpay that
 * `pnpm start` uses): an owner fills the billing profile, buys a package, pays on the provider's
 * own page, sees the balance rise in another open tab without a reload (to the paisa, equal to
 * the ledger's), and downloads the tax invoice, whose PDF text (poppler's pdftotext) holds every
 * field Rule 46 asks for. With UPDATE_SCREENSHOTS=1 the billing page and the invoice's first page
 * are published into docs/payments/ for docs/payments.md.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import { launchChromium, missingBrowser } from './support/chromium.ts';
import {
  missingPoppler, pdfText, publishPaymentsPicture, renderFirstPage, startPaymentsStack, testSupplier, type PaymentsStack,
} from './support/payments-stack.ts';
import { expectedRupees } from './support/rupees.ts';
import { statFigure, uiTimeout, waitForExactText, waitForValue } from './support/page-waits.ts';

const serverUrl = testPostgresUrl();
const browserMissing = missingBrowser();
const popplerMissing = await missingPoppler();

const password = 'correct horse battery staple';
/** ₹12,34,567.89 before the purchase, so Indian grouping shows in every balance. */
const openingCreditMicros = 1_234_567_890_000n;
/** The package: ₹1,18,000.00 including 18 % GST, for ₹1,00,000 of credit. */
const pack = { name: 'Growth', pricePaise: 11_800_000n, creditMicros: 100_000_000_000n } as const;
/** The buyer's billing profile: Karnataka like the supplier, so the invoice splits CGST + SGST. */
const buyer = { legalName: 'Asha Traders LLP', address: '4 Residency Road, Bengaluru 560025', stateCode: '29', gstin: '29AAGCA1234R1ZB' } as const;

/**
 * The GST split of a GST-inclusive price at 18 %, written out independently of the admin:
 * taxable = price × 10000 / 11800 rounded half up; the tax is the rest, halved with CGST rounded down.
 */
function expectedSplit(pricePaise: bigint) {
  const taxable = (pricePaise * 10_000n * 2n + 11_800n) / (11_800n * 2n);
  const tax = pricePaise - taxable;
  const cgst = tax / 2n;
  return { taxable, cgst, sgst: tax - cgst };
}

/** Paise as the invoice and the dashboard write them: "₹1,18,000.00". */
const paiseText = (paise: bigint) => expectedRupees(paise * 10_000n);


describe.skipIf(!serverUrl || browserMissing !== undefined)('buying a top-up in a browser', () => {
  let stack: PaymentsStack;
  let browser: Browser;
  let context: BrowserContext;
  let pictures = '';
  let organisationId = '';
  let packageId = '';
  let watcher: Page;
  let buyerPage: Page;
  let topUp: Record<string, any>;

  const admin = (method: string, path: string, body?: unknown, headers?: Record<string, string>) => stack.gateway.admin(method, path, body, headers);

  /** Follows the main navigation to a page and waits for its heading. */
  async function openPage(page: Page, name: RegExp) {
    await page.getByRole('navigation', { name: /main/i }).getByRole('link', { name }).click();
    await page.getByRole('heading', { level: 1, name }).waitFor();
  }

  beforeAll(async () => {
    [stack, browser, pictures] = await Promise.all([
      startPaymentsStack(serverUrl!), launchChromium(), mkdtemp(join(tmpdir(), 'payments-pictures-')),
    ]);
    console.info(`payments pictures: ${pictures}`);
    const organisation = await admin('POST', '/organisations', { name: 'Asha Traders', rpm_limit: 600 });
    organisationId = organisation.id as string;
    await admin('POST', `/organisations/${organisationId}/credits`, { amount_micros: openingCreditMicros.toString(), reason: 'opening credit' }, { 'idempotency-key': 'pay-opening' });
    const created = await admin('POST', '/topup-packages', { name: pack.name, price_paise: pack.pricePaise.toString(), credit_micros: pack.creditMicros.toString(), sort_order: 1 });
    packageId = (created.id ?? created.package?.id) as string;
    expect(packageId).toMatch(/^pkg_/);

    context = await browser.newContext({
      baseURL: stack.origin, viewport: { width: 1280, height: 900 }, timezoneId: 'Asia/Kolkata', locale: 'en-IN', reducedMotion: 'reduce', acceptDownloads: true,
    });
    context.setDefaultTimeout(uiTimeout);
  }, 90_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await stack?.close();
  }, 30_000);

  it('an owner fills the billing profile (the GSTIN is checked by the admin)', async () => {
    const invitation = await admin('POST', `/organisations/${organisationId}/invitations`, { email: 'asha.owner@example.test', role: 'owner' });
    watcher = await context.newPage();
    await watcher.goto(invitation.link as string);
    await watcher.getByLabel(/your name/i).fill('Asha Rao');
    await watcher.getByLabel(/^new password$/i).fill(password);
    await watcher.getByLabel(/^repeat the password$/i).fill(password);
    await watcher.getByRole('button', { name: /save and sign in/i }).click();
    await watcher.getByRole('navigation', { name: /main/i }).waitFor();
    await openPage(watcher, /^billing$/i);
    await waitForExactText(statFigure(watcher, 'Available balance'), expectedRupees(openingCreditMicros));
    // No profile yet: Buy is offered but off.
    await expect.poll(() => watcher.getByRole('button', { name: `Buy ${pack.name}` }).isDisabled()).toBe(true);

    await watcher.getByLabel('Legal name').fill(buyer.legalName);
    await watcher.getByLabel('Address').fill(buyer.address);
    await watcher.getByLabel(/state \(place of supply\)/i).selectOption(buyer.stateCode);
    // A GSTIN whose check character is wrong: the admin refuses it, and the message sits beside the field.
    const wrongCheck = `${buyer.gstin.slice(0, 14)}${buyer.gstin.endsWith('A') ? 'B' : 'A'}`;
    await watcher.getByLabel(/gstin/i).fill(wrongCheck);
    await watcher.getByRole('button', { name: 'Save billing profile' }).click();
    await watcher.locator('#billing-gstin-error').waitFor();
    await watcher.getByLabel(/gstin/i).fill(buyer.gstin);
    await watcher.getByRole('button', { name: 'Save billing profile' }).click();
    await watcher.getByRole('status').filter({ hasText: /billing profile saved/i }).waitFor();

    const saved = await admin('GET', `/organisations/${organisationId}/billing-profile`);
    expect(saved.billing_profile).toMatchObject({ legal_name: buyer.legalName, address: buyer.address, state_code: buyer.stateCode, gstin: buyer.gstin });
  });

  it('buys the package on the local provider\'s pay page; the other open tab sees the balance rise without a reload, equal to the ledger\'s', async () => {
    // The price shows GST included, the credit in rupees.
    const row = watcher.getByRole('table', { name: 'Top-up packages' }).getByRole('row').filter({ hasText: pack.name });
    await row.filter({ hasText: `${paiseText(pack.pricePaise)} incl. GST` }).filter({ hasText: expectedRupees(pack.creditMicros) }).waitFor();
    await watcher.evaluate('window.notReloaded = true');

    // The purchase happens in a second tab of the same person; the first keeps watching.
    buyerPage = await context.newPage();
    await buyerPage.goto('/#/billing');
    await buyerPage.getByRole('button', { name: `Buy ${pack.name}` }).click();
    const payments = new URL(stack.payments.url);
    await buyerPage.waitForURL((url) => url.origin === payments.origin);
    await buyerPage.getByRole('button', { name: `Pay ${paiseText(pack.pricePaise)}` }).click();

    // Back on the dashboard: the callback was posted and the top-up settles.
    await buyerPage.waitForURL((url) => url.origin === stack.origin && url.hash.startsWith('#/billing'));
    await buyerPage.getByRole('status').filter({ hasText: `Payment received: ${expectedRupees(pack.creditMicros)} was added` }).waitFor();
    // Once posted, the signed fields leave the address bar (and the history); the top-up's id stays.
    await buyerPage.waitForURL((url) => url.hash.startsWith('#/billing?topup=top_') && !url.hash.includes('razorpay_'));

    const balance = await stack.gateway.settledBalance(organisationId);
    expect(BigInt(balance.available_micros as string)).toBe(openingCreditMicros + pack.creditMicros);
    await waitForExactText(statFigure(watcher, 'Available balance'), expectedRupees(balance.available_micros as string));
    expect(await watcher.evaluate<boolean | undefined>('window.notReloaded')).toBe(true);

    // Exactly one top-up, credited once and invoiced, with its one tax invoice.
    const listed = await admin('GET', `/organisations/${organisationId}/topups`);
    expect(listed.data).toHaveLength(1);
    topUp = await waitForValue(async () => {
      const current = await admin('GET', `/organisations/${organisationId}/topups/${(listed.data as Array<{ id: string }>)[0]!.id}`);
      return current.state === 'invoiced' ? current : undefined;
    });
    expect(topUp).toMatchObject({ package_id: packageId, price_paise: pack.pricePaise.toString(), credit_micros: pack.creditMicros.toString(), provider: 'local' });
    expect(topUp.documents).toEqual([expect.objectContaining({ kind: 'tax_invoice' })]);
    const topUps = watcher.getByRole('table', { name: /top-ups/i });
    await topUps.getByRole('row').filter({ hasText: topUp.id as string }).filter({ hasText: 'Credited and invoiced' }).waitFor();

    const screenshot = join(pictures, 'billing.png');
    await watcher.screenshot({ path: screenshot, fullPage: true, animations: 'disabled', caret: 'hide' });
    await publishPaymentsPicture(screenshot, 'billing');
  });

  it.skipIf(popplerMissing !== undefined)('downloads the tax invoice from the invoices page; its PDF text holds every field Rule 46 asks for', async () => {
    const document = topUp.documents[0] as { id: string; serial: string };
    await openPage(watcher, /^invoices$/i);
    const row = watcher.getByRole('table', { name: /gst documents/i }).getByRole('row').filter({ hasText: document.serial });
    await row.waitFor();
    const [download] = await Promise.all([watcher.waitForEvent('download'), row.getByRole('link', { name: /download/i }).click()]);
    const pdf = join(pictures, `${document.serial}.pdf`);
    await download.saveAs(pdf);
    const text = await pdfText(pdf);

    const details = await admin('GET', `/organisations/${organisationId}/invoices/${document.id}`);
    const split = expectedSplit(pack.pricePaise);
    expect(details).toMatchObject({
      kind: 'tax_invoice', serial: document.serial, total_paise: pack.pricePaise.toString(), igst_paise: '0',
      taxable_paise: split.taxable.toString(), cgst_paise: split.cgst.toString(), sgst_paise: split.sgst.toString(),
    });
    expect(document.serial.length).toBeLessThanOrEqual(16);
    const issuedIst = new Date(Date.parse(details.issued_at as string) + 330 * 60_000).toISOString().slice(0, 10);

    const required: Array<[string, string | RegExp]> = [
      ['title', /tax invoice/i],
      ['supplier name', testSupplier.name],
      ['supplier address', testSupplier.address],
      ['supplier GSTIN', testSupplier.gstin],
      ['serial', document.serial],
      ['date of issue (IST)', issuedIst],
      ['recipient name', buyer.legalName],
      ['recipient address', buyer.address],
      ['recipient GSTIN', buyer.gstin],
      ['place of supply', /place of supply: [^:]*(29|karnataka)/i],
      ['SAC', /SAC: 998315/],
      ['taxable value', `Taxable value: ${paiseText(split.taxable)}`],
      ['CGST', new RegExp(`CGST @ 9(\\.0+)?% ?: ${escapeRegExp(paiseText(split.cgst))}`)],
      ['SGST', new RegExp(`SGST @ 9(\\.0+)?% ?: ${escapeRegExp(paiseText(split.sgst))}`)],
      ['total in figures', `Total: ${paiseText(pack.pricePaise)}`],
      ['total in words', /rupees one lakh eighteen thousand only/i],
    ];
    const missing = required.filter(([, wanted]) => (typeof wanted === 'string' ? !text.includes(wanted) : !wanted.test(text))).map(([name]) => name);
    expect(missing, `the invoice text:\n${text}`).toEqual([]);
    expect(text).not.toMatch(/IGST/);

    const picture = await renderFirstPage(pdf, pictures, 'invoice');
    await publishPaymentsPicture(picture, 'invoice');
  });

  it('a failed payment on the pay page comes back as a failure, and the balance does not move', async () => {
    const before = await stack.gateway.settledBalance(organisationId);
    await buyerPage.goto('/#/billing');
    await buyerPage.getByRole('button', { name: `Buy ${pack.name}` }).click();
    await buyerPage.getByRole('button', { name: 'Fail payment' }).click();
    await buyerPage.waitForURL((url) => url.origin === stack.origin && url.hash.includes('error=payment_failed'));
    await buyerPage.getByRole('alert').filter({ hasText: `The payment for ${pack.name} failed` }).waitFor();

    const listed = await admin('GET', `/organisations/${organisationId}/topups`);
    const failed = (listed.data as Array<Record<string, any>>).find((item) => item.id !== topUp.id)!;
    await waitForValue(async () => ((await admin('GET', `/organisations/${organisationId}/topups/${failed.id as string}`)).state === 'failed' ? true : undefined));
    await buyerPage.getByRole('table', { name: /top-ups/i }).getByRole('row').filter({ hasText: failed.id as string }).filter({ hasText: 'Payment failed' }).waitFor();
    expect((await stack.gateway.settledBalance(organisationId)).available_micros).toBe(before.available_micros);
  });

  it('a platform admin refunds a tenth of the paid top-up from its row: the matching credit leaves the balance and a credit note is issued', async () => {
    const created = await admin('POST', '/people', { email: 'priya.platform@example.test', platform_admin: true });
    const platformContext = await browser.newContext({ baseURL: stack.origin, viewport: { width: 1280, height: 900 }, timezoneId: 'Asia/Kolkata', locale: 'en-IN' });
    platformContext.setDefaultTimeout(uiTimeout);
    try {
      const platform = await platformContext.newPage();
      await platform.goto(created.link as string);
      await platform.getByLabel(/your name/i).fill('Priya Nair');
      await platform.getByLabel(/^new password$/i).fill(password);
      await platform.getByLabel(/^repeat the password$/i).fill(password);
      await platform.getByRole('button', { name: /save and sign in/i }).click();
      await platform.getByRole('navigation', { name: /main/i }).waitFor();
      await platform.goto(`/#/billing?organisation=${organisationId}`);
      const before = await stack.gateway.settledBalance(organisationId);

      await platform.getByRole('button', { name: `Refund ${topUp.id as string}` }).click();
      const dialog = platform.getByRole('dialog');
      await dialog.getByLabel(/refund \(₹/i).fill('11,800');
      await dialog.getByRole('button', { name: 'Refund', exact: true }).click();
      await dialog.getByRole('status').filter({ hasText: `of ${paiseText(1_180_000n)}` }).waitFor();

      // A tenth of the price takes back a tenth of the credit: ₹10,000.00.
      const refunds = await admin('GET', `/organisations/${organisationId}/topups/${topUp.id as string}/refunds`);
      expect(refunds.data).toEqual([expect.objectContaining({ amount_paise: '1180000', debit_micros: (pack.creditMicros / 10n).toString() })]);
      const after = await stack.gateway.settledBalance(organisationId);
      expect(BigInt(after.available_micros as string)).toBe(BigInt(before.available_micros as string) - pack.creditMicros / 10n);
      await waitForExactText(statFigure(platform, 'Available balance'), expectedRupees(after.available_micros as string));
      const notes = await waitForValue(async () => {
        const list = await admin('GET', `/organisations/${organisationId}/invoices?kind=credit_note`);
        return (list.data as Array<Record<string, any>>).length === 1 ? list.data as Array<Record<string, any>> : undefined;
      });
      expect(notes[0]).toMatchObject({ total_paise: '1180000', references_document_id: (topUp.documents[0] as { id: string }).id });
    } finally {
      await platformContext.close();
    }
  });
});

/** `text` as a literal inside a regular expression. */
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
