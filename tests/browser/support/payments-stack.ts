/**
 * The dashboard stack with payments: the local payment provider (@gateway/local-payments, the
 * stand-in for Razorpay that `pnpm start` uses) in this process, and the admin started with
 * PAYMENT_PROVIDER=local against it, a fixed supplier for its invoices, and the provider's signed
 * webhooks pointed at the admin. Plus poppler-utils for reading the invoice PDFs
 * (pdftotext, pdftoppm) and the pictures docs/payments.md shows.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startLocalPayments, type LocalPayments } from '@gateway/local-payments';
import { startDashboardStack, type DashboardStack } from './dashboard-stack.ts';

const run = promisify(execFile);

/** The supplier printed on the test's invoices (Karnataka, state code 29; the GSTIN's check character is valid). */
export const testSupplier = {
  name: 'Gateway Test Supplier Pvt Ltd',
  address: '12 MG Road, Bengaluru 560001',
  gstin: '29AAACG1234K1ZP',
  stateCode: '29',
} as const;

/** A running dashboard stack whose admin takes payments through the local provider. */
export interface PaymentsStack extends DashboardStack {
  payments: LocalPayments;
}

/** Starts the local provider, then the stack with PAYMENT_PROVIDER=local, then points the provider's webhooks at the admin. */
export async function startPaymentsStack(serverUrl: string): Promise<PaymentsStack> {
  const secrets = {
    keyId: `rzp_test_${randomBytes(8).toString('hex')}`,
    keySecret: randomBytes(24).toString('hex'),
    webhookSecret: randomBytes(24).toString('hex'),
  };
  // No webhook URL yet: the admin's port is chosen when it starts; webhooks are held until then.
  const payments = await startLocalPayments(secrets);
  let stack: DashboardStack;
  try {
    stack = await startDashboardStack(serverUrl, {
      PAYMENT_PROVIDER: 'local', PAYMENT_DEVELOPMENT_MODE: 'true', LOCAL_PAYMENTS_URL: payments.url,
      RAZORPAY_KEY_ID: secrets.keyId, RAZORPAY_KEY_SECRET: secrets.keySecret, RAZORPAY_WEBHOOK_SECRET: secrets.webhookSecret,
      INVOICE_SUPPLIER_NAME: testSupplier.name, INVOICE_SUPPLIER_ADDRESS: testSupplier.address,
      INVOICE_SUPPLIER_GSTIN: testSupplier.gstin, INVOICE_SUPPLIER_STATE_CODE: testSupplier.stateCode,
    });
  } catch (error) {
    await payments.close();
    throw error;
  }
  payments.setWebhookUrl(`${stack.origin}/webhooks/razorpay`);
  return {
    ...stack, payments,
    async close() {
      await payments.close();
      await stack.close();
    },
  };
}

/**
 * Why the PDF checks cannot run here (no poppler-utils), or undefined when they can. Under CI=true
 * a missing tool throws instead: the test fails, it is never skipped.
 */
export async function missingPoppler(): Promise<string | undefined> {
  try {
    await run('pdftotext', ['-v']);
    await run('pdftoppm', ['-v']);
    return undefined;
  } catch {
    const reason = 'pdftotext/pdftoppm not found: install poppler-utils (apt-get install poppler-utils)';
    if (process.env.CI === 'true') throw new Error(`CI=true and the payments browser test cannot read invoice PDFs: ${reason}`);
    console.warn(`\n!!! The invoice PDF checks will be SKIPPED: ${reason}\n`);
    return reason;
  }
}

/** The text of a PDF as pdftotext extracts it, with every run of whitespace made one space. */
export async function pdfText(file: string): Promise<string> {
  const { stdout } = await run('pdftotext', ['-enc', 'UTF-8', file, '-']);
  return stdout.replace(/\s+/g, ' ').trim();
}

/** Where docs/payments.md's pictures live. */
const docsFolder = fileURLToPath(new URL('../../../docs/payments/', import.meta.url));

/** Whether this run publishes pictures into docs/payments/ (UPDATE_SCREENSHOTS=1). */
const publishingPictures = process.env.UPDATE_SCREENSHOTS === '1';

/** Renders a PDF's first page as `<folder>/<name>.png` at 80 dpi (pdftoppm); returns the file. */
export async function renderFirstPage(pdf: string, folder: string, name: string): Promise<string> {
  const prefix = join(folder, name);
  await run('pdftoppm', ['-png', '-r', '80', '-f', '1', '-l', '1', '-singlefile', pdf, prefix]);
  return `${prefix}.png`;
}

/** Copies a picture into docs/payments/ as `<name>.png` when publishing (UPDATE_SCREENSHOTS=1). */
export async function publishPaymentsPicture(file: string, name: string): Promise<void> {
  if (!publishingPictures) return;
  await mkdir(docsFolder, { recursive: true });
  await copyFile(file, join(docsFolder, `${name}.png`));
}
