import type { Queryable } from '@gateway/db';
import { financialYearOf, formatSerial, type DocumentSeries } from './invoice-serial.ts';

/** A serial allocated to a document: its number in its series and financial year, and its text. */
export interface AllocatedSerial {
  financialYear: string;
  series: DocumentSeries;
  sequenceNumber: bigint;
  serial: string;
}

/**
 * Takes the next number of a (prefix, financial year, series) counter inside the caller's
 * transaction. The upsert locks the counter row until the transaction ends, so concurrent issues
 * queue behind each other and get consecutive numbers; a transaction that rolls back returns its
 * number with it (no gaps). The first document of a financial year gets 1.
 */
export async function allocateSerial(tx: Queryable, input: { prefix: string; series: DocumentSeries; issuedAt: Date }): Promise<AllocatedSerial> {
  const financialYear = financialYearOf(input.issuedAt);
  const { rows } = await tx.query<{ last_number: bigint }>(
    `INSERT INTO tax_document_counters (prefix, financial_year, series, last_number) VALUES ($1, $2, $3, 1)
     ON CONFLICT (prefix, financial_year, series) DO UPDATE SET last_number = tax_document_counters.last_number + 1
     RETURNING last_number`,
    [input.prefix, financialYear, input.series],
  );
  const sequenceNumber = BigInt(rows[0]!.last_number);
  return { financialYear, series: input.series, sequenceNumber, serial: formatSerial(input.prefix, financialYear, input.series, sequenceNumber) };
}
