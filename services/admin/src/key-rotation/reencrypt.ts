/**
 * Re-sealing every stored secret under the current ADMIN_ENCRYPTION_KEY (`cli.ts reencrypt`), and
 * the check that says when a previous key may be dropped (`cli.ts reencrypt --check`).
 * docs/operations.md "Rotating ADMIN_ENCRYPTION_KEY" is the procedure around it.
 */
import type { Database } from '@gateway/db';
import { webhookSecretContext } from '../alerts/domain/alert-jobs.ts';
import { credentialContext } from '../catalog/domain/config-snapshot.ts';
import { deploymentCredentialContext } from '../catalog/domain/upstream-deployment-store.ts';
import { SealedValueError, type CredentialCipher } from '../common/domain/credential-cipher.ts';

/** A column holding values sealed by the credential cipher: its table, the row's key, and the context each value is bound to. */
interface SealedColumn {
  table: string;
  /** The primary key (text): rows are walked in its order, in batches. */
  keyColumn: string;
  column: string;
  /** The additional authenticated data the row's value was sealed with. */
  context(rowKey: string): string;
}

/** Every column the credential cipher writes (the one list re-encryption walks; a test holds it to the schema). */
const sealedColumns: readonly SealedColumn[] = [
  { table: 'gateway_models', keyColumn: 'slug', column: 'upstream_api_key_encrypted', context: credentialContext },
  { table: 'upstream_deployments', keyColumn: 'id', column: 'upstream_api_key_encrypted', context: deploymentCredentialContext },
  { table: 'alert_webhooks', keyColumn: 'organisation_id', column: 'secret_sealed', context: webhookSecretContext },
];

/** A stored value that did not open: where it is and why (a key id at most, never a key or a value). */
interface UnreadableValue {
  table: string;
  column: string;
  rowKey: string;
  message: string;
  /** The key id it names when that key is not configured. */
  missingKeyId?: string;
}

/** What one pass over one column found and did. */
interface ColumnReport {
  table: string;
  column: string;
  /** Rows with a stored value. */
  seen: number;
  /** Sealed under the current key in the current format: nothing to do. */
  alreadyCurrent: number;
  /** Re-sealed under the current key by this pass (always 0 with --check). */
  resealed: number;
  /** Still to be re-sealed, by the id of the key that opens them (with --check; or rows that changed under this pass). */
  needsReseal: Record<string, number>;
  /** Of those, how many are in the old v1 format (no key id). */
  legacyFormat: number;
  /** Rows written by someone else between this pass's read and its update: left as they are (a rerun looks again). */
  changedMeanwhile: number;
}

/** The outcome of a re-encryption (or its check) over every sealed column. */
export interface ReencryptReport {
  currentKeyId: string;
  checkOnly: boolean;
  columns: ColumnReport[];
  unreadable: UnreadableValue[];
}

/** How a re-encryption runs. */
export interface ReencryptOptions {
  /** Only count what still needs a previous key; write nothing. */
  checkOnly: boolean;
  /** Rows read per query (default 100). */
  batchSize?: number;
}

/**
 * Re-seals every stored secret that is not yet sealed by the current key in the current format.
 * Rows are read in batches by primary key; each rewrite is one UPDATE (its own short transaction,
 * no network call anywhere) that applies only if the value is still the one read, so a value an
 * admin rewrote meanwhile is never overwritten. Idempotent and resumable: a rerun skips what is
 * current. Values that do not open are reported, never skipped silently.
 */
export async function reencryptSealedValues(db: Database, cipher: CredentialCipher, options: ReencryptOptions): Promise<ReencryptReport> {
  const report: ReencryptReport = { currentKeyId: cipher.currentKeyId, checkOnly: options.checkOnly, columns: [], unreadable: [] };
  const batchSize = options.batchSize ?? 100;
  for (const sealed of sealedColumns) {
    const column: ColumnReport = {
      table: sealed.table, column: sealed.column, seen: 0, alreadyCurrent: 0, resealed: 0, needsReseal: {}, legacyFormat: 0, changedMeanwhile: 0,
    };
    report.columns.push(column);
    let after = '';
    for (;;) {
      const { rows } = await db.query<{ row_key: string; value: string }>(
        `SELECT ${sealed.keyColumn} AS row_key, ${sealed.column} AS value FROM ${sealed.table}
          WHERE ${sealed.keyColumn} COLLATE "C" > $1 AND ${sealed.column} IS NOT NULL ORDER BY ${sealed.keyColumn} COLLATE "C" LIMIT $2`,
        [after, batchSize],
      );
      for (const row of rows) {
        column.seen += 1;
        await reencryptRow(db, cipher, sealed, row.row_key, row.value, options.checkOnly, column, report.unreadable);
      }
      if (rows.length < batchSize) break;
      after = rows.at(-1)!.row_key;
    }
  }
  return report;
}

async function reencryptRow(
  db: Database, cipher: CredentialCipher, sealed: SealedColumn, rowKey: string, value: string, checkOnly: boolean,
  column: ColumnReport, unreadable: UnreadableValue[],
): Promise<void> {
  let opened;
  try {
    opened = cipher.open(value, sealed.context(rowKey));
  } catch (error) {
    if (!(error instanceof SealedValueError)) throw error;
    unreadable.push({ table: sealed.table, column: sealed.column, rowKey, message: error.message, ...(error.problem === 'unknown_key' ? { missingKeyId: error.keyId } : {}) });
    return;
  }
  if (opened.keyId === cipher.currentKeyId && !opened.legacyFormat) {
    column.alreadyCurrent += 1;
    return;
  }
  const pending = () => {
    column.needsReseal[opened.keyId] = (column.needsReseal[opened.keyId] ?? 0) + 1;
    if (opened.legacyFormat) column.legacyFormat += 1;
  };
  if (checkOnly) {
    pending();
    return;
  }
  const resealed = cipher.encrypt(opened.plaintext, sealed.context(rowKey));
  // Compare-and-set: applies only if nobody rewrote the value since it was read.
  const { rowCount } = await db.query(
    `UPDATE ${sealed.table} SET ${sealed.column} = $1 WHERE ${sealed.keyColumn} = $2 AND ${sealed.column} = $3`,
    [resealed, rowKey, value],
  );
  if (rowCount === 1) {
    column.resealed += 1;
  } else {
    column.changedMeanwhile += 1;
    pending();
  }
}

/** Rows that only a previous key opens (so it may not be dropped yet). */
function needingPreviousKey(report: ReencryptReport): number {
  return report.columns.reduce((sum, column) => sum
    + Object.entries(column.needsReseal).reduce((count, [keyId, rows]) => count + (keyId === report.currentKeyId ? 0 : rows), 0), 0);
}

/**
 * Rows that stand between the operator and dropping every previous key: those only a previous key
 * opens, and those no configured key opens. (v1 values the current key opens do not count: they
 * want re-sealing, but no previous key.)
 */
export function outstandingCount(report: ReencryptReport): number {
  return report.unreadable.length + needingPreviousKey(report);
}

/** The report as the command prints it: one line per column, the totals, every unreadable row, and what to do next. */
export function formatReencryptReport(report: ReencryptReport): string {
  const lines = [`${report.checkOnly ? 'reencrypt --check' : 'reencrypt'}: the current key (ADMIN_ENCRYPTION_KEY) has key id ${report.currentKeyId}`];
  const totals = { seen: 0, alreadyCurrent: 0, resealed: 0, needsReseal: 0 };
  for (const column of report.columns) {
    const needs = Object.values(column.needsReseal).reduce((a, b) => a + b, 0);
    totals.seen += column.seen;
    totals.alreadyCurrent += column.alreadyCurrent;
    totals.resealed += column.resealed;
    totals.needsReseal += needs;
    const byKey = Object.entries(column.needsReseal).map(([keyId, count]) => `key id ${keyId}: ${count}`);
    if (column.legacyFormat > 0) byKey.push(`old v1 format: ${column.legacyFormat}`);
    if (column.changedMeanwhile > 0) byKey.push(`changed during this run: ${column.changedMeanwhile}`);
    lines.push(`  ${column.table}.${column.column}: seen ${column.seen}, re-sealed ${column.resealed}, already current ${column.alreadyCurrent}, `
      + `still to re-seal ${needs}${byKey.length > 0 ? ` (${byKey.join(', ')})` : ''}`);
  }
  const previous = needingPreviousKey(report);
  lines.push(`  total: seen ${totals.seen}, re-sealed ${totals.resealed}, already current ${totals.alreadyCurrent}, still to re-seal ${totals.needsReseal}`
    + ` (needing a previous key ${previous}), unreadable ${report.unreadable.length}`);
  for (const value of report.unreadable) lines.push(`  UNREADABLE ${value.table} ${JSON.stringify(value.rowKey)}: ${value.message}`);
  if (report.unreadable.length > 0) {
    const missing = [...new Set(report.unreadable.flatMap((value) => value.missingKeyId ?? []))];
    lines.push(missing.length > 0
      ? `Add the key(s) with id ${missing.join(', ')} to ADMIN_ENCRYPTION_KEYS_PREVIOUS and run reencrypt again; until then these secrets do not open.`
      : 'These values do not open with any configured key: restore the key that sealed them, or set the secrets again through the admin API.');
  } else if (previous > 0) {
    lines.push(report.checkOnly
      ? 'Previous keys are still needed: run `reencrypt` (without --check), then check again.'
      : 'Some rows changed during this run: run reencrypt again.');
  } else if (totals.needsReseal > 0) {
    lines.push('Old-format (v1) values under the current key remain: run `reencrypt` to re-seal them. No previous key is needed: ADMIN_ENCRYPTION_KEYS_PREVIOUS may be emptied.');
  } else {
    lines.push('Every stored secret is sealed under the current key: ADMIN_ENCRYPTION_KEYS_PREVIOUS may be emptied.');
  }
  return `${lines.join('\n')}\n`;
}
