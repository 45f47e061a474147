import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { startRequestLogMaintenance } from './request-log-maintenance.ts';
import { useLedgerDatabase, useTestLedger } from './testing/ledger-test-setup.ts';
import { uniqueId } from './testing/start-test-ledger.ts';

const serverUrl = testPostgresUrl();

/** A served record with every field set; `change` overrides some. */
function record(change: Partial<ledgerV1.RequestRecord> = {}): ledgerV1.RequestRecord {
  return ledgerV1.RequestRecord.fromPartial({
    requestId: uniqueId('req'), organisationId: 'org-log', projectId: 'project-log', surface: 'chat_completions',
    modelSlug: 'model-a', status: 200, errorCode: '', stream: true, startedAtMs: BigInt(Date.now()), latencyMs: 840,
    timeToFirstTokenMs: 120, inputTokens: 1_000n, outputTokens: 50n, costMicros: 290n,
    tokenClasses: [
      { tokenClass: 'input', tokens: 100n, costMicros: 40n, providerCostMicros: 30n },
      { tokenClass: 'cached_input', tokens: 900n, costMicros: 45n, providerCostMicros: 20n },
      { tokenClass: 'output', tokens: 50n, costMicros: 205n, providerCostMicros: 100n },
    ],
    ...change,
  });
}

describe.skipIf(!serverUrl)('RecordRequests', () => {
  const ledger = useTestLedger('postgres', { serverUrl });

  /** Calls RecordRequests with the proxy's identity; answers the response or the gRPC error. */
  function recordRequests(records: ledgerV1.RequestRecord[]): Promise<ledgerV1.RecordRequestsResponse> {
    return new Promise((resolve, reject) => {
      ledger.client.recordRequests({ records }, (error, response) => (error ? reject(error) : resolve(response)));
    });
  }

  it('keeps each record once, with its figures exact, however often a batch is retried', async () => {
    const served = record({ costMicros: 9_007_199_254_740_993n }); // above 2^53: a float would round it
    const refused = record({ status: 402, errorCode: 'insufficient_balance', stream: false, timeToFirstTokenMs: undefined, inputTokens: 0n, outputTokens: 0n, costMicros: 0n, tokenClasses: [], latencyMs: 3 });
    expect(await recordRequests([served, refused])).toEqual({ recorded: 2 });
    expect(await recordRequests([served, refused])).toEqual({ recorded: 0 });
    // A retried batch with a new record beside old ones writes only the new one; a duplicate within one batch is kept once.
    const later = record();
    expect(await recordRequests([refused, later, later])).toEqual({ recorded: 1 });

    const { rows } = await ledger.database.query<Record<string, unknown>>(
      `SELECT request_id, status, error_code, stream, (extract(epoch FROM started_at) * 1000)::bigint AS started_at_ms, latency_ms,
         time_to_first_token_ms, input_tokens, output_tokens, cost_micros, token_classes->1->>'cost_micros' AS cached_cost
       FROM request_log WHERE request_id = ANY($1) ORDER BY status`,
      [[served.requestId, refused.requestId]],
    );
    expect(rows).toEqual([
      {
        request_id: served.requestId, status: 200, error_code: null, stream: true, started_at_ms: served.startedAtMs, latency_ms: 840,
        time_to_first_token_ms: 120, input_tokens: 1_000n, output_tokens: 50n, cost_micros: 9_007_199_254_740_993n, cached_cost: '45',
      },
      {
        request_id: refused.requestId, status: 402, error_code: 'insufficient_balance', stream: false, started_at_ms: refused.startedAtMs,
        latency_ms: 3, time_to_first_token_ms: null, input_tokens: 0n, output_tokens: 0n, cost_micros: 0n, cached_cost: null,
      },
    ]);
  });

  it('refuses a malformed batch whole with INVALID_ARGUMENT naming the record and field, writing nothing', async () => {
    const before = (await ledger.database.query<{ n: bigint }>('SELECT count(*) AS n FROM request_log')).rows[0]!.n;
    const refusals: Array<[ledgerV1.RequestRecord[], string]> = [
      [[record(), record({ requestId: '' })], 'records[1]: request_id must not be empty'],
      [[record({ organisationId: 'has space' })], 'organisation_id must be printable ASCII'],
      [[record({ surface: 'images' })], 'surface must be one of chat_completions'],
      [[record({ status: 99 })], 'status must be an HTTP status'],
      [[record({ startedAtMs: 0n })], 'started_at_ms must be a time after the Unix epoch'],
      [[record({ latencyMs: -1 })], 'latency_ms must not be negative'],
      [[record({ timeToFirstTokenMs: 900 })], 'time_to_first_token_ms must be between 0 and latency_ms'],
      [[record({ costMicros: -1n })], 'cost_micros must not be negative'],
      [[record({ modelSlug: 'a\u0000b' })], 'model_slug must not contain control characters'],
      [[record({ tokenClasses: [{ tokenClass: 'vibes', tokens: 1n, costMicros: 1n, providerCostMicros: 0n }] })], 'unknown token_class'],
      [Array.from({ length: 1_001 }, () => record()), 'at most 1000 per call, got 1001'],
    ];
    for (const [records, message] of refusals) {
      const error = await recordRequests(records).then(() => undefined, (caught: unknown) => caught as ServiceError);
      expect(error?.code, message).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(error?.details).toContain(message);
      expect(error?.metadata.get('x-gateway-error-code')).toEqual(['invalid_request']);
    }
    expect((await ledger.database.query<{ n: bigint }>('SELECT count(*) AS n FROM request_log')).rows[0]!.n).toBe(before);
    // 1,000 is allowed, in one call.
    expect(await recordRequests(Array.from({ length: 1_000 }, () => record()))).toEqual({ recorded: 1_000 });
  });

  it('is the proxy\'s: the admin identity is refused', async () => {
    const error = await new Promise<ServiceError | null>((resolve) => {
      ledger.adminClient.recordRequests({ records: [record()] }, (caught) => resolve(caught));
    });
    expect(error?.code).toBe(GrpcStatus.PERMISSION_DENIED);
  });
});

describe.skipIf(!serverUrl)('request log day partitions and retention', () => {
  const db = useLedgerDatabase('postgres', { poolSize: 2 });

  /** Today in Asia/Kolkata plus `days`, e.g. '2026-11-30'. */
  async function kolkataDay(days: number): Promise<string> {
    const { rows } = await db.query<{ day: string }>(
      "SELECT to_char((now() AT TIME ZONE 'Asia/Kolkata')::date + $1::integer, 'YYYY-MM-DD') AS day", [days],
    );
    return rows[0]!.day;
  }

  /** Inserts one record started at `at` (timestamptz text). */
  async function insertAt(requestId: string, at: string): Promise<void> {
    await db.query(
      `INSERT INTO request_log (request_id, organisation_id, project_id, surface, model_slug, status, stream, started_at, latency_ms)
       VALUES ($1, 'org', 'project', 'embeddings', 'm', 200, false, $2::timestamptz, 5)`,
      [requestId, at],
    );
  }

  /** The day partitions that exist, by name, sorted. */
  async function dayPartitions(): Promise<string[]> {
    const { rows } = await db.query<{ name: string }>(
      "SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'request_log'::regclass ORDER BY 1",
    );
    return rows.map((row) => row.name).filter((name) => name !== 'request_log_default');
  }

  /** `request_log_p2026_11_28` for '2026-11-28'. */
  const partitionOf = (day: string) => `request_log_p${day.replaceAll('-', '_')}`;

  /** Runs the maintenance as the ledger does (a pass at start), with `retentionDays`, and stops it after that pass. */
  async function maintain(retentionDays: number): Promise<void> {
    const maintenance = startRequestLogMaintenance({ database: db, logger: createLogger('ledger', 'silent'), retentionDays, intervalMs: 3_600_000 });
    await maintenance.stop();
  }

  it('creates today and two days ahead, moves strays out of DEFAULT, and drops days past retention', async () => {
    // Rows that arrive before any partition: one 40 days ago, one 3 days ago, one today at 00:10 IST.
    const [old, recent, today] = [await kolkataDay(-40), await kolkataDay(-3), await kolkataDay(0)];
    await insertAt('stray-old', `${old} 12:00:00+05:30`);
    await insertAt('stray-recent', `${recent} 23:59:59.999+05:30`);
    await insertAt('stray-today', `${today} 00:10:00+05:30`);

    await maintain(30);
    const ahead = [today, await kolkataDay(1), await kolkataDay(2)];
    // The 40-day-old day is past 30 days of retention: created to take its stray, then dropped whole.
    expect(await dayPartitions()).toEqual([recent, ...ahead].map(partitionOf));
    const { rows } = await db.query<{ request_id: string; partition: string }>(
      'SELECT request_id, tableoid::regclass::text AS partition FROM request_log ORDER BY started_at',
    );
    expect(rows).toEqual([
      { request_id: 'stray-recent', partition: partitionOf(recent) },
      { request_id: 'stray-today', partition: partitionOf(today) },
    ]);

    // Again: nothing changes; retention 0 keeps every day; retention 2 drops the day 3 days ago.
    await maintain(30);
    await maintain(0);
    expect(await dayPartitions()).toEqual([recent, ...ahead].map(partitionOf));
    await maintain(2);
    expect(await dayPartitions()).toEqual(ahead.map(partitionOf));
    expect((await db.query('SELECT 1 FROM request_log')).rowCount).toBe(1);
    expect((await db.query('SELECT 1 FROM request_log_default')).rowCount).toBe(0);
  });
});
