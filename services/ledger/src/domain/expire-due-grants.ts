import type { Database } from '@gateway/db';

/** What one grant expiry batch resolved. */
export interface GrantExpiryBatchResult {
  /** Grants moved from held to expired. */
  expiredCount: number;
  /** What they still held, returned to available, µ₹ (commercial grants; internal ones hold no wallet money). */
  returnedMicros: bigint;
}

/**
 * Expires up to `batchSize` held credit grants past their database-clock deadline (EXPIRY), in
 * one transaction: a SIGKILLed proxy's grants. Everything a grant still holds returns to
 * available (`held −= remaining; available += remaining`, one `expire` movement naming the
 * grant, CONSERVATION), the grant becomes `expired` with nothing remaining; a carved settle
 * that arrives later is debited from available. `FOR UPDATE SKIP LOCKED`, like reservations,
 * so replicas never sweep the same grant or wait on a settle holding it; lock order grants ->
 * accounts (sorted), the global one.
 */
export async function expireDueGrants(db: Database, batchSize: number): Promise<GrantExpiryBatchResult> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string; organisation_id: string; billing_mode: string; returned_micros: bigint }>(
      `WITH due AS (
         SELECT id, remaining_micros FROM grants
         WHERE status = 'held' AND expires_at <= now()
         ORDER BY expires_at
         LIMIT $1
         FOR UPDATE SKIP LOCKED
       )
       UPDATE grants g SET status = 'expired', resolved_at = now(), remaining_micros = 0
       FROM due WHERE g.id = due.id
       RETURNING g.id, g.organisation_id, g.billing_mode, due.remaining_micros AS returned_micros`,
      [batchSize],
    );
    const commercial = rows.filter((row) => row.billing_mode === 'commercial' && row.returned_micros > 0n)
      .sort((a, b) => (a.organisation_id < b.organisation_id ? -1 : a.organisation_id > b.organisation_id ? 1 : 0));
    const byOrganisation = new Map<string, bigint>();
    for (const row of commercial) byOrganisation.set(row.organisation_id, (byOrganisation.get(row.organisation_id) ?? 0n) + row.returned_micros);
    for (const [organisationId, returned] of byOrganisation) {
      await tx.query(
        'UPDATE accounts SET held_micros = held_micros - $2, available_micros = available_micros + $2 WHERE organisation_id = $1',
        [organisationId, returned],
      );
    }
    if (commercial.length > 0) {
      await tx.query(
        `INSERT INTO movements (organisation_id, kind, amount_micros, credited_delta_micros, available_delta_micros,
           held_delta_micros, debited_delta_micros, grant_id, detail)
         SELECT o, 'expire', a, 0, a, -a, 0, g, '{"reason":"grant deadline passed"}'::jsonb
         FROM unnest($1::text[], $2::bigint[], $3::text[]) AS m (o, a, g)`,
        [commercial.map((row) => row.organisation_id), commercial.map((row) => row.returned_micros), commercial.map((row) => row.id)],
      );
    }
    return { expiredCount: rows.length, returnedMicros: commercial.reduce((sum, row) => sum + row.returned_micros, 0n) };
  });
}
