/**
 * The request log end to end (docs/proxy.md and docs/ledger.md, "Request log"): real ledger,
 * admin and proxy processes with the fake upstream. Served, streamed, refused and failed requests
 * each leave one row in the ledger's request_log, with the status and error code the client got,
 * a latency, a time to first token where a body was produced, and the cost of the request's usage
 * record to the µ₹. A key rotated away is recorded as its project's 401; an unknown key is not.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { testPostgresUrl } from '@gateway/testkit';
import { startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();

/** One request_log row as the test reads it. */
interface LogRow {
  request_id: string;
  organisation_id: string;
  project_id: string;
  surface: string;
  model_slug: string;
  status: number;
  error_code: string | null;
  stream: boolean;
  latency_ms: number;
  time_to_first_token_ms: number | null;
  input_tokens: bigint;
  output_tokens: bigint;
  cost_micros: bigint;
  /** The cost of the request's usage record (null: it has none). */
  usage_cost_micros: bigint | null;
}

describe.skipIf(!serverUrl)('request log across ledger, admin and proxy', () => {
  let gateway: E2eGateway;
  let ledgerDb: Database;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
    ledgerDb = await openDatabase({ url: gateway.databaseUrl, schema: 'ledger', poolSize: 2 });
  }, 120_000);

  afterAll(async () => {
    await ledgerDb?.close();
    await gateway?.close();
  });

  /** Sends one chat completion with its own request id; answers the id, the status and the body read whole. */
  async function chat(apiKey: string, content: string, stream = false): Promise<{ requestId: string; status: number; body: string }> {
    const requestId = `rl-${randomUUID()}`;
    const response = await fetch(`${gateway.proxyBases[0]}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ model: gateway.modelSlug, messages: [{ role: 'user', content }], stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }),
    });
    return { requestId, status: response.status, body: await response.text() };
  }

  /** The request_log rows of these request ids, once `count` of them are there (records leave in batches about every second). */
  async function rowsOf(requestIds: string[], count: number): Promise<Map<string, LogRow>> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const { rows } = await ledgerDb.query<LogRow>(
        `SELECT l.request_id, l.organisation_id, l.project_id, l.surface, l.model_slug, l.status, l.error_code, l.stream, l.latency_ms,
           l.time_to_first_token_ms, l.input_tokens, l.output_tokens, l.cost_micros,
           (SELECT u.cost_micros FROM usage_records u WHERE u.request_id = l.request_id) AS usage_cost_micros
         FROM request_log l WHERE l.request_id = ANY($1::text[])`,
        [requestIds],
      );
      if (rows.length >= count || Date.now() > deadline) return new Map(rows.map((row) => [row.request_id, row]));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('records a 200, a streamed 200, a 502, a stream cut mid-way, a 402, a 429 and a rotated key\'s 401; not an unknown key', async () => {
    const projectA = await gateway.admin('POST', `/organisations/${gateway.organisationId}/projects`, { name: 'request-log' });
    const keyA: string = projectA.api_key;
    const projectAId: string = projectA.project.id;

    const served = await chat(keyA, 'hello [[fake:reply_words=4]]');
    const streamed = await chat(keyA, 'hello [[fake:reply_words=6]] [[fake:chunk_delay_ms=30]]', true);
    const failed = await chat(keyA, 'hello [[fake:status=500]]');
    const cut = await chat(keyA, 'hello [[fake:reply_words=20]] [[fake:fail_after=2]]', true);
    expect([served.status, streamed.status, failed.status, cut.status]).toEqual([200, 200, 502, 200]);

    // An organisation with no money and one request a minute: its first request is refused for the balance, its second for the rate.
    const poor = await gateway.admin('POST', '/organisations', { name: 'Request log poor', rpm_limit: 1, allowed_gateway_models: [gateway.modelSlug] });
    const projectB = await gateway.admin('POST', `/organisations/${poor.id}/projects`, { name: 'poor' });
    const unpaid = await chat(projectB.api_key, 'hello');
    const limited = await chat(projectB.api_key, 'hello');
    expect([unpaid.status, limited.status]).toEqual([402, 429]);

    // The key rotated away: refused as any unknown key is (same body), but recorded in its project's log.
    const rotation = await gateway.admin('POST', `/projects/${projectAId}/api-key-rotations`);
    expect(rotation.api_key).not.toBe(keyA);
    const rotated = await chat(keyA, 'hello');
    const unknown = await chat(`${keyA.slice(0, -8)}zzzzzzzz`, 'hello');
    expect([rotated.status, unknown.status]).toEqual([401, 401]);
    expect(JSON.parse(rotated.body)).toEqual(JSON.parse(unknown.body));

    const recorded = [served, streamed, failed, cut, unpaid, limited, rotated];
    const rows = await rowsOf([...recorded, unknown].map((request) => request.requestId), recorded.length);
    expect(rows.has(unknown.requestId)).toBe(false);
    const row = (request: { requestId: string }) => rows.get(request.requestId);

    expect(row(served)).toMatchObject({
      organisation_id: gateway.organisationId, project_id: projectAId, surface: 'chat_completions', model_slug: gateway.modelSlug,
      status: 200, error_code: null, stream: false,
    });
    expect(row(streamed)).toMatchObject({ project_id: projectAId, status: 200, error_code: null, stream: true });
    expect(row(failed)).toMatchObject({ project_id: projectAId, status: 502, error_code: 'upstream_error', stream: false });
    expect(row(cut)).toMatchObject({ project_id: projectAId, status: 200, stream: true });
    expect(row(cut)?.error_code).not.toBeNull();
    expect(row(unpaid)).toMatchObject({ organisation_id: poor.id, status: 402, error_code: 'insufficient_balance', cost_micros: 0n });
    expect(row(limited)).toMatchObject({ organisation_id: poor.id, status: 429, error_code: 'rate_limit_exceeded', cost_micros: 0n });
    expect(row(rotated)).toMatchObject({
      organisation_id: gateway.organisationId, project_id: projectAId, status: 401, error_code: 'invalid_api_key', cost_micros: 0n, time_to_first_token_ms: null,
    });

    for (const request of recorded) {
      const kept = row(request)!;
      expect(kept.latency_ms, request.requestId).toBeGreaterThan(0);
      // The display copy of the cost is the usage record's, to the µ₹ (0 where there is none).
      expect(kept.cost_micros, request.requestId).toBe(kept.usage_cost_micros ?? 0n);
    }
    // Served requests produced a body: a time to first token within the latency, and a cost.
    for (const request of [served, streamed]) {
      const kept = row(request)!;
      expect(kept.cost_micros).toBeGreaterThan(0n);
      expect(kept.output_tokens).toBeGreaterThan(0n);
      expect(kept.time_to_first_token_ms).not.toBeNull();
      expect(kept.time_to_first_token_ms!).toBeLessThanOrEqual(kept.latency_ms);
    }
    // The stream's first delta left before its last (six words 30 ms apart).
    expect(row(streamed)!.time_to_first_token_ms!).toBeLessThan(row(streamed)!.latency_ms);
  }, 120_000);
});
