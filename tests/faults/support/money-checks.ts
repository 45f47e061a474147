/**
 * What the fault suite checks after each fault, with the figures for its table: the ledger's
 * verify is clean, credited = available + held + debited for every organisation (CONSERVATION),
 * no hold outlives its deadline once swept (EXPIRY), available never went below zero
 * (NO_OVERSPEND, also polled during the load) and every request that reached the upstream has
 * exactly one usage record, matched by request id (NOTHING_FREE).
 */
import type { FaultGateway, FaultUsageRecord } from './fault-gateway.ts';
import { runLedgerVerify, faultTimings } from './fault-gateway.ts';
import { waitFor } from './fault-load.ts';
import type { LocalPostgres } from './local-servers.ts';

/** Polls an organisation's available balance while a scenario runs: NO_OVERSPEND at every instant we can see. */
export interface BalanceMonitor {
  /** The lowest available balance seen, µ₹ (undefined before the first read). */
  minAvailableMicros(): bigint | undefined;
  /** Reads made, and reads that failed (the admin or ledger may be down on purpose). */
  reads(): { ok: number; failed: number };
  stop(): Promise<void>;
}

/** Starts polling the balance every intervalMs. */
export function monitorBalance(gateway: FaultGateway, organisationId: string, intervalMs = 100): BalanceMonitor {
  let min: bigint | undefined;
  let ok = 0;
  let failed = 0;
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      try {
        const balance = await gateway.balance(organisationId);
        ok += 1;
        if (min === undefined || balance.availableMicros < min) min = balance.availableMicros;
      } catch {
        failed += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    minAvailableMicros: () => min,
    reads: () => ({ ok, failed }),
    async stop() { stopping = true; await loop; },
  };
}

/** How usage records matched the requests that reached the upstream. */
export interface UsageMatch {
  /** Request ids the upstream received (the scenario's). */
  reached: Set<string>;
  /** Records by request id. */
  recordsById: Map<string, FaultUsageRecord[]>;
  /** Reached, not exempt, and without a record. */
  missing: string[];
  /** More than one record for one request id. */
  duplicated: string[];
  /** Request ids of records that match no request that reached the upstream ('' once per record without a request id). */
  unexpected: string[];
}

/** Matches the organisation's usage records to the requests the upstream received; `exempt` may have none (never two). */
export async function matchUsage(gateway: FaultGateway, organisationId: string, requestIdPrefix: string, exempt: ReadonlySet<string> = new Set()): Promise<UsageMatch> {
  const reached = new Set(gateway.upstream.requests.map((r) => r.tag).filter((tag): tag is string => tag !== undefined && tag.startsWith(`${requestIdPrefix}-`)));
  const recordsById = new Map<string, FaultUsageRecord[]>();
  for (const record of await gateway.usage(organisationId)) {
    const list = recordsById.get(record.requestId) ?? [];
    list.push(record);
    recordsById.set(record.requestId, list);
  }
  const missing = [...reached].filter((id) => !exempt.has(id) && (recordsById.get(id)?.length ?? 0) === 0).sort();
  // Records without a request id cannot be matched to any request: reported as unmatched, once each.
  const duplicated = [...recordsById].filter(([id, list]) => id !== '' && list.length > 1).map(([id]) => id).sort();
  const unexpected = [...recordsById].filter(([id]) => !reached.has(id)).flatMap(([id, list]) => (id === '' ? list.map(() => id) : [id])).sort();
  return { reached, recordsById, missing, duplicated, unexpected };
}

/** Everything checked after a fault, with its figures; `problems` is empty when every check held. */
export interface AfterFaultReport {
  problems: string[];
  /** One short line of figures for the fault table. */
  figures: string;
  usage: UsageMatch;
}

/** Options of checkAfterFault. */
export interface AfterFaultOptions {
  gateway: FaultGateway;
  postgres: LocalPostgres;
  organisationId: string;
  requestIdPrefix: string;
  monitor: BalanceMonitor;
  /** Requests a SIGKILL of a proxy may leave without a record (never with two). */
  exempt?: ReadonlySet<string>;
}

/**
 * Waits for the scenario's holds to resolve (settled, released, or expired by the sweeper), then
 * runs every check. Waiting is bounded by the reservation TTL (or stream lease) plus slack, not a fixed sleep.
 */
export async function checkAfterFault(options: AfterFaultOptions): Promise<AfterFaultReport> {
  const { gateway, postgres, organisationId } = options;
  const problems: string[] = [];

  // EXPIRY: every hold resolves; the sweeper takes those orphaned by the fault after their deadline
  // (a Reserve's TTL, or a checkpointed stream's lease after its last checkpoint).
  const holdBoundMs = Math.max(faultTimings.reserveTtlMs, faultTimings.streamLeaseMs);
  let held = -1n;
  try {
    await waitFor('the organisation to hold nothing', async () => {
      held = (await gateway.balance(organisationId)).heldMicros;
      return held === 0n;
    }, holdBoundMs + 15_000, 100);
  } catch {
    problems.push(`still ${held} µ₹ held ${holdBoundMs + 15_000} ms after the load`);
  }
  const pastDeadlineSql = "SELECT count(*) FROM ledger.reservations WHERE status = 'held' AND expires_at < now() - interval '2 seconds'";
  let pastDeadline = -1;
  try {
    await waitFor('no hold past its deadline', async () => {
      pastDeadline = Number(await postgres.query(pastDeadlineSql));
      return pastDeadline === 0;
    }, 10_000, 200);
  } catch {
    problems.push(`${pastDeadline} reservation(s) still held more than 2 s past their deadline`);
  }

  const verify = await runLedgerVerify(postgres.url);
  const verifyLine = verify.output.split('\n').filter((line) => line.startsWith('verify:')).at(-1) ?? verify.output.slice(-300);
  if (verify.exitCode !== 0) problems.push(`ledger verify exited ${verify.exitCode}: ${verify.output.slice(-1000)}`);

  // CONSERVATION for every organisation of the run, through the admin API.
  let conserved = 0;
  for (const organisation of gateway.organisations) {
    const b = await gateway.balance(organisation.id);
    if (b.creditedMicros === b.availableMicros + b.heldMicros + b.debitedMicros) conserved += 1;
    else problems.push(`organisation ${organisation.id}: credited ${b.creditedMicros} != available ${b.availableMicros} + held ${b.heldMicros} + debited ${b.debitedMicros}`);
    if (b.availableMicros < 0n) problems.push(`organisation ${organisation.id}: available ${b.availableMicros} µ₹ < 0`);
  }

  await options.monitor.stop();
  const min = options.monitor.minAvailableMicros();
  if (min !== undefined && min < 0n) problems.push(`available went to ${min} µ₹ during the load`);

  const usage = await matchUsage(gateway, organisationId, options.requestIdPrefix, options.exempt);
  if (usage.missing.length > 0) problems.push(`${usage.missing.length} of ${usage.reached.size} requests that reached the upstream have no usage record (e.g. ${usage.missing.slice(0, 5).join(', ')})`);
  if (usage.duplicated.length > 0) problems.push(`${usage.duplicated.length} request ids have more than one usage record (e.g. ${usage.duplicated.slice(0, 5).join(', ')})`);
  if (usage.unexpected.length > 0) problems.push(`${usage.unexpected.length} usage records not matching a request that reached the upstream (request ids ${usage.unexpected.slice(0, 5).map((id) => JSON.stringify(id)).join(', ')})`);

  const recorded = usage.reached.size - usage.missing.length - [...(options.exempt ?? [])].filter((id) => usage.reached.has(id) && !usage.recordsById.has(id)).length;
  const reads = options.monitor.reads();
  const figures = [
    `usage ${recorded}/${usage.reached.size} reached-upstream requests with exactly one record` +
      (usage.missing.length > 0 ? ` (${usage.missing.length} MISSING)` : '') + (usage.duplicated.length > 0 ? ` (${usage.duplicated.length} DUPLICATED)` : ''),
    verifyLine.replace(/^verify: /, 'verify '),
    `conservation ${conserved}/${gateway.organisations.length} orgs`,
    `holds past deadline ${pastDeadline}`,
    `min available ${min ?? 'n/a'} µ₹ (${reads.ok} polls)`,
  ].join('; ');
  return { problems, figures, usage };
}
