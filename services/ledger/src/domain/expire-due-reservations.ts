import type { Database } from '@gateway/db';
import type { BillingMode } from './ledger-types.ts';
import { appendMovement } from './append-movement.ts';
import { addProjectSpend, raiseSoftAlertIfDue } from './project-budget.ts';

/** What one expiry batch resolved. */
export interface ExpiryBatchResult {
  /** Reservations moved from held to expired. */
  expiredCount: number;
  /** Hold returned to available across them, µ₹. */
  releasedMicros: bigint;
  /** Charged from checkpoints across them, µ₹ (commercial debits; internal usage is recorded, not debited). */
  chargedMicros: bigint;
}

/** A reservation the batch expired, with its last checkpoint. */
interface ExpiredRow {
  id: string;
  organisation_id: string;
  project_id: string;
  billing_mode: BillingMode;
  amount_micros: bigint;
  model_slug: string;
  checkpoint_sequence: bigint;
  checkpoint_input_tokens: bigint;
  checkpoint_output_tokens: bigint;
  checkpoint_cost_micros: bigint;
  checkpoint_provider_cost_micros: bigint;
  /** The request id a checkpoint recorded ('' if none did). */
  request_id: string;
  /** What a checkpoint recorded as the streaming deployment ('' none). */
  deployment: string;
  /**
   * ledger_settlement_split of the checkpoint's cost against the hold, µ₹: charged (debited),
   * the part beyond the hold (overrun) and the hold returned. All zero in internal billing mode,
   * which moves no wallet money (INTERNAL_MODE).
   */
  charged_micros: bigint;
  overrun_micros: bigint;
  released_micros: bigint;
}

/**
 * Expires up to `batchSize` held reservations whose deadline has passed by the database clock
 * (EXPIRY), all in one transaction. Without a checkpoint the hold returns to available (one
 * `expire` movement). With one, the checkpointed cost is charged like a settlement (a `settle`
 * movement, then `expire` for the rest of the hold) and one provisional usage record is written
 * from the checkpoint, under the request id the checkpoints carried, so a stream whose proxy
 * died is charged what it delivered, not zero, and can be found by its request id; a late
 * settle may finalise that record. `FOR UPDATE SKIP LOCKED` lets several ledger replicas
 * sweep at once without waiting on each other or on a settle holding a row; the status
 * re-check under the lock leaves alone a reservation settled or released meanwhile.
 */
export async function expireDueReservations(db: Database, batchSize: number): Promise<ExpiryBatchResult> {
  return db.transaction(async (tx) => {
    // The charge from a checkpoint is split like any settlement, by the one rule in SQL
    // (services/ledger/sql/ledger_settlement_split.sql): from the hold first, beyond it overrun.
    const { rows } = await tx.query<ExpiredRow>(
      `WITH due AS (
         SELECT id FROM reservations
         WHERE status = 'held' AND expires_at <= now()
         ORDER BY expires_at
         LIMIT $1
         FOR UPDATE SKIP LOCKED
       ), expired AS (
         UPDATE reservations AS r SET status = 'expired', resolved_at = now(),
           expiry_charged_micros = CASE WHEN r.checkpoint_sequence > 0 THEN r.checkpoint_cost_micros END
         FROM due WHERE r.id = due.id
         RETURNING r.id, r.organisation_id, r.project_id, r.billing_mode, r.amount_micros, r.model_slug,
           r.checkpoint_sequence, r.checkpoint_input_tokens, r.checkpoint_output_tokens, r.checkpoint_cost_micros,
           r.checkpoint_provider_cost_micros, r.request_id, r.deployment
       )
       SELECT e.*, s.debited_micros AS charged_micros, s.overrun_micros, s.released_micros
       FROM expired e
       CROSS JOIN LATERAL ledger_settlement_split(
         CASE WHEN e.billing_mode = 'commercial' THEN e.amount_micros ELSE 0 END,
         CASE WHEN e.billing_mode = 'commercial' THEN e.checkpoint_cost_micros ELSE 0 END) AS s`,
      [batchSize],
    );
    const byOrganisation = new Map<string, { held: bigint; available: bigint; debited: bigint }>();
    for (const row of rows) {
      if (row.billing_mode !== 'commercial') continue;
      const sums = byOrganisation.get(row.organisation_id) ?? { held: 0n, available: 0n, debited: 0n };
      sums.held += row.amount_micros;
      sums.available += row.released_micros - row.overrun_micros;
      sums.debited += row.charged_micros;
      byOrganisation.set(row.organisation_id, sums);
    }
    // Accounts in a fixed order, so two sweepers (or a sweeper and a settle) never deadlock.
    let releasedMicros = 0n;
    let chargedMicros = 0n;
    for (const organisationId of [...byOrganisation.keys()].sort()) {
      const sums = byOrganisation.get(organisationId)!;
      await tx.query(
        `UPDATE accounts SET held_micros = held_micros - $2, available_micros = available_micros + $3,
           debited_micros = debited_micros + $4
         WHERE organisation_id = $1`,
        [organisationId, sums.held, sums.available, sums.debited],
      );
    }
    for (const row of rows) {
      releasedMicros += row.released_micros;
      chargedMicros += row.charged_micros;
      if (row.billing_mode === 'commercial') {
        await appendMovement(tx, {
          organisationId: row.organisation_id, kind: 'settle', amountMicros: row.charged_micros,
          overrunMicros: row.overrun_micros, reservationId: row.id,
          detail: { reason: 'charged from checkpoint at expiry', checkpointSequence: String(row.checkpoint_sequence) },
        });
        await appendMovement(tx, {
          organisationId: row.organisation_id, kind: 'expire', amountMicros: row.released_micros,
          reservationId: row.id, detail: { reason: 'deadline passed' },
        });
      }
    }
    // Usage records and project spend, projects in a fixed order (spend rows are locked by the upsert).
    const checkpointed = rows.filter((row) => row.checkpoint_sequence > 0n)
      .sort((a, b) => (a.project_id < b.project_id ? -1 : a.project_id > b.project_id ? 1 : 0));
    for (const row of checkpointed) {
      // Its daily roll-up is written at commit by the usage_records_rollup_provisional trigger (0012).
      const inserted = await tx.query<{ month: string }>(
        `INSERT INTO usage_records (reservation_id, organisation_id, project_id, model_slug, input_tokens, output_tokens,
           cost_micros, provider_cost_micros, debited_micros, billing_mode, usage_source, request_id, provisional, deployment)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'gateway_estimate', $11, true, nullif($12, ''))
         RETURNING to_char(created_at AT TIME ZONE 'Asia/Kolkata', 'YYYY-MM') AS month`,
        [row.id, row.organisation_id, row.project_id, row.model_slug, row.checkpoint_input_tokens, row.checkpoint_output_tokens,
          row.checkpoint_cost_micros, row.checkpoint_provider_cost_micros, row.charged_micros, row.billing_mode, row.request_id,
          row.deployment],
      );
      await addProjectSpend(tx, {
        projectId: row.project_id, organisationId: row.organisation_id, month: inserted.rows[0]!.month,
        costMicros: row.checkpoint_cost_micros,
      });
    }
    for (const projectId of new Set(checkpointed.map((row) => row.project_id))) {
      await raiseSoftAlertIfDue(tx, projectId);
    }
    return { expiredCount: rows.length, releasedMicros, chargedMicros };
  });
}
