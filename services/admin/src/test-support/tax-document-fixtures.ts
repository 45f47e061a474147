import { execFile } from 'node:child_process';
import { spawnSync } from 'node:child_process';
import type { Queryable } from '@gateway/db';
import { newId } from '../common/domain/ids.ts';
import type { TaxDocument } from '../invoicing/domain/tax-document-records.ts';

/** A document's recipient, as a stored document names it. */
type DocumentRecipient = TaxDocument['recipient'];

/** A recipient in Karnataka (29, the default supplier state): intra-state, CGST + SGST. */
export const karnatakaRecipient: DocumentRecipient = {
  legal_name: 'Bengaluru Widgets Private Limited', address: '14 Residency Road, Bengaluru 560025', gstin: '29AAGCB1286Q1Z5', state_code: '29',
};

/** An unregistered recipient in Maharashtra (27): inter-state, IGST. */
export const maharashtraRecipient: DocumentRecipient = {
  legal_name: 'Mumbai Analytics LLP', address: '7 Nariman Point, Mumbai 400021', gstin: null, state_code: '27',
};

/** A recipient outside India (state code 96, Foreign Country): an export of services. */
export const singaporeRecipient: DocumentRecipient = {
  legal_name: 'Lion City Analytics Pte Ltd', address: '1 Raffles Place, #20-01', gstin: null, state_code: '96', country: 'Singapore',
};

/** Inserts a package and a top-up of it in a paid state (as the top-up flow leaves it), returning the top-up id. */
export async function insertPaidTopUp(db: Queryable, input: {
  organisationId: string; pricePaise: bigint; recipient: DocumentRecipient; packageName?: string; state?: string;
  /** The credit bought, µ₹; default a rupee of credit per rupee paid (price_paise × 10,000). */
  creditMicros?: bigint;
}): Promise<string> {
  const packageId = newId('topUpPackage');
  const topUpId = newId('topUp');
  const creditMicros = input.creditMicros ?? input.pricePaise * 10_000n;
  await db.query(
    `INSERT INTO topup_packages (id, name, price_paise, credit_micros) VALUES ($1, $2, $3, $4)`,
    [packageId, input.packageName ?? 'Starter ₹1,180', input.pricePaise.toString(), creditMicros.toString()],
  );
  await db.query(
    `INSERT INTO topups (id, organisation_id, package_id, price_paise, credit_micros, state, provider, billing_snapshot, expires_at, paid_at, credited_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'local', $7, clock_timestamp() + interval '1 day', clock_timestamp(), clock_timestamp())`,
    [topUpId, input.organisationId, packageId, input.pricePaise.toString(), creditMicros.toString(),
      input.state ?? 'credited', JSON.stringify({ ...input.recipient, email: null })],
  );
  return topUpId;
}

/** Whether poppler's pdftotext is on this machine (under CI=true a missing one fails the tests that need it). */
export function hasPdftotext(): boolean {
  return spawnSync('pdftotext', ['-v']).error === undefined;
}

/** The text of a PDF as poppler's pdftotext extracts it, whitespace runs made single spaces. */
export function pdfText(pdf: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('pdftotext', ['-enc', 'UTF-8', '-', '-'], { encoding: 'utf8' }, (error, stdout) => {
      if (error) reject(error);
      else resolve(stdout.replace(/\s+/g, ' '));
    });
    child.stdin!.end(pdf);
  });
}
