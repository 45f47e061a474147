import type { Database } from '@gateway/db';
import { LedgerOperationError } from './ledger-operation-error.ts';

/**
 * One Reserve or Settle as the database function `ledger_apply_batch` takes it
 * (services/ledger/sql/ledger_apply_batch.sql): validated and fingerprinted in TypeScript; `problems` is set when the input is invalid,
 * and then only the key and the fingerprint travel (the function still answers a replay or a
 * conflict first, as the result precedence says). Money and counts travel as decimal strings.
 */
export interface LedgerOperation {
  kind: 'reserve' | 'settle';
  reservationId: string;
  /** Idempotency fingerprint of the payload (SHA-256 hex). */
  fingerprint: string;
  /** Every input problem, joined by '; '; absent when the input is valid. */
  problems?: string;
  /** The validated payload fields (string values; µ₹, tokens and ms as decimal strings). */
  fields?: Record<string, string>;
}

/** What the database answered for one operation: its outcome, or the error that rolled it back alone. */
export type LedgerOperationAnswer =
  | {
    ok: true;
    result: string;
    /** µ₹ */
    availableMicros: bigint;
    /** ms since the Unix epoch by the database clock (Reserve), else 0. */
    expiresAtMs: bigint;
    /** µ₹ (Settle), else 0. */
    debitedMicros: bigint;
    /** µ₹ (Settle), else 0. */
    releasedMicros: bigint;
    /** µ₹ (Settle), else 0. */
    overrunMicros: bigint;
    detail: string;
  }
  | { ok: false; error: Error };

/** A row of `ledger_apply_batch`. */
interface BatchRow {
  ordinal: number;
  result: string | null;
  available_micros: bigint | null;
  expires_at_ms: bigint | null;
  debited_micros: bigint | null;
  released_micros: bigint | null;
  overrun_micros: bigint | null;
  detail: string | null;
  error_state: string | null;
  error_message: string | null;
}

/** SQLSTATEs after which the whole batch is run again: it rolled back and left nothing behind. */
const retryableSqlStates = new Set(['40001', '40P01']);

/** Attempts after the first when a batch hit a deadlock or serialization failure. */
const maxBatchRetries = 5;

/**
 * LR002: the set-based batch (sql/ledger_apply_batch_set.sql) decided on a balance that another batch changed
 * before this one locked the account (only near an empty wallet); it rolled back and left
 * nothing. It is run again as it was this many times (it then reads the new balance), and after
 * that isolated, where every operation locks before it decides.
 */
const staleBalanceSqlState = 'LR002';
const maxStaleBalanceRetries = 2;

/** The jsonb one operation becomes: kind, key, fingerprint, problems, then the payload fields. */
function operationJson(operation: LedgerOperation): Record<string, string> {
  const json: Record<string, string> = { ...(operation.fields ?? {}), kind: operation.kind, reservationId: operation.reservationId, fingerprint: operation.fingerprint };
  if (operation.problems !== undefined) json.problems = operation.problems;
  return json;
}

/**
 * Applies operations in one round trip and one transaction (one commit), in array order, each
 * exactly as it would run alone after the ones before it. The fast path runs the batch without
 * subtransactions; if any operation fails, that attempt rolled back as a whole and left
 * nothing, and the batch runs again with each operation in its own subtransaction, where an
 * operation that fails is rolled back alone and answers with its error while the others are
 * unaffected. A deadlock or serialization failure rolls the whole batch back, and it is run again.
 */
export async function applyLedgerOperations(db: Database, operations: readonly LedgerOperation[]): Promise<LedgerOperationAnswer[]> {
  const payload = JSON.stringify(operations.map(operationJson));
  let isolate = false;
  let staleRetries = 0;
  for (let attempt = 0; ; attempt++) {
    try {
      // One statement is its own transaction: no BEGIN/COMMIT round trips.
      const { rows } = await db.query<BatchRow>('SELECT * FROM ledger_apply_batch($1::jsonb, $2)', [payload, isolate]);
      if (rows.length !== operations.length) throw new Error(`ledger batch answered ${rows.length} rows for ${operations.length} operations`);
      return rows.sort((a, b) => a.ordinal - b.ordinal).map(toAnswer);
    } catch (error) {
      const sqlState = (error as { code?: string }).code;
      if (sqlState === staleBalanceSqlState && staleRetries < maxStaleBalanceRetries) { staleRetries++; attempt--; continue; }
      if (attempt < maxBatchRetries && sqlState !== undefined && retryableSqlStates.has(sqlState)) continue;
      if (!isolate && sqlState !== undefined) { isolate = true; continue; }
      throw error;
    }
  }
}

function toAnswer(row: BatchRow): LedgerOperationAnswer {
  if (row.error_state !== null) return { ok: false, error: new LedgerOperationError(row.error_state, row.error_message ?? '') };
  return {
    ok: true,
    result: row.result!,
    availableMicros: row.available_micros!,
    expiresAtMs: row.expires_at_ms!,
    debitedMicros: row.debited_micros!,
    releasedMicros: row.released_micros!,
    overrunMicros: row.overrun_micros!,
    detail: row.detail!,
  };
}

/** Something that applies one operation: the database directly (a batch of one) or a batcher. */
export interface LedgerOperationRunner {
  /** Applies one operation and answers it; rejects when it failed. */
  run(operation: LedgerOperation): Promise<LedgerOperationAnswer & { ok: true }>;
}

/** Runs each operation alone: one round trip and one commit per operation. */
export function runAlone(db: Database): LedgerOperationRunner {
  return {
    async run(operation) {
      const [answer] = await applyLedgerOperations(db, [operation]);
      if (!answer!.ok) throw answer!.error;
      return answer!;
    },
  };
}

/** A Database or a runner, as the domain functions accept either. */
export type LedgerTarget = Database | LedgerOperationRunner;

/** The runner for a target: a runner as is, a database as a batch of one per operation. */
export function runnerOf(target: LedgerTarget): LedgerOperationRunner {
  return 'run' in target ? target : runAlone(target);
}
