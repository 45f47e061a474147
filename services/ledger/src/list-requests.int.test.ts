import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { callUnary } from '@gateway/grpc';
import { testPostgresUrl } from '@gateway/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();

/** Deadline of each call, ms. */
const callDeadlineMs = 10_000;

/** A request_log row as a test seeds it. */
interface SeededRequest {
  requestId: string;
  projectId: string;
  surface: string;
  modelSlug: string;
  status: number;
  errorCode: string | null;
  stream: boolean;
  startedAtMs: number;
  costMicros: bigint;
}

/** ListRequests and GetRequest: the request log read newest first, keyset pages, filters, one record by id. */
describe.skipIf(!serverUrl)('ListRequests and GetRequest', () => {
  const ledger = useTestLedger('postgres', { serverUrl });
  const organisationId = uniqueId('org');
  const otherOrganisationId = uniqueId('org-other');
  /** 2026-11-20T10:00:00.000Z; each seeded request one minute (plus a few ms) after the previous. */
  const baseMs = Date.UTC(2026, 10, 20, 10, 0, 0, 0);
  const statuses: Array<[number, string | null]> = [
    [200, null], [200, null], [401, 'invalid_api_key'], [402, 'insufficient_balance'], [429, 'rate_limited'],
    [502, 'upstream_error'], [200, null], [404, 'model_not_found'], [503, 'upstream_unavailable'], [200, null],
  ];
  const seeded: SeededRequest[] = statuses.map(([status, errorCode], index) => ({
    requestId: `req-${String(index).padStart(2, '0')}-${organisationId}`,
    projectId: index % 2 === 0 ? 'project-even' : 'project-odd',
    surface: index % 3 === 0 ? 'responses' : 'chat_completions',
    modelSlug: index < 5 ? 'model-a' : 'model-b',
    status, errorCode, stream: index % 4 === 1,
    // Days apart every third request, so the rows span several Asia/Kolkata days.
    startedAtMs: baseMs + index * 60_000 + index + Math.floor(index / 3) * 86_400_000,
    costMicros: BigInt(3 + index),
  }));
  const newestFirst = [...seeded].reverse();

  /** Inserts one request_log row. */
  async function insert(row: SeededRequest & { organisationId: string; tokenClasses?: unknown; ttftMs?: number | null }) {
    await ledger.database.query(
      `INSERT INTO request_log (request_id, organisation_id, project_id, surface, model_slug, status, error_code, stream, started_at,
         latency_ms, time_to_first_token_ms, input_tokens, output_tokens, cost_micros, token_classes)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, timestamptz 'epoch' + $9::bigint * interval '1 millisecond', $10, $11, $12, $13, $14, $15)`,
      [row.requestId, row.organisationId, row.projectId, row.surface, row.modelSlug, row.status, row.errorCode, row.stream, row.startedAtMs,
        1234, row.ttftMs ?? null, 1000, 20, row.costMicros, row.tokenClasses === undefined ? null : JSON.stringify(row.tokenClasses)],
    );
  }

  beforeAll(async () => {
    for (const [index, row] of seeded.entries()) {
      await insert({
        ...row, organisationId,
        ttftMs: row.stream ? 321 : null,
        tokenClasses: index === 0 ? [{ token_class: 'input', tokens: 100, cost_micros: 1 }, { token_class: 'cached_input', tokens: 900, cost_micros: 1 },
          { token_class: 'output', tokens: 20, cost_micros: 1 }] : undefined,
      });
    }
    // Another organisation's request at the same instant as the newest: never listed or read for this one.
    await insert({ ...seeded.at(-1)!, requestId: `req-other-${otherOrganisationId}`, organisationId: otherOrganisationId });
  });

  const list = (request: Partial<ledgerV1.ListRequestsRequest>) => callUnary(ledger.adminClient.listRequests, ledger.adminClient, {
    organisationId, projectId: '', modelSlug: '', surface: '', status: 0, fromMs: 0n, toMs: 0n, pageSize: 0, pageToken: '', ...request,
  }, callDeadlineMs);
  const get = (requestId: string, forOrganisation = organisationId) =>
    callUnary(ledger.adminClient.getRequest, ledger.adminClient, { organisationId: forOrganisation, requestId }, callDeadlineMs);

  /** Reads every page, returning the pages' request ids. */
  async function allPages(request: Partial<ledgerV1.ListRequestsRequest>): Promise<string[][]> {
    const pages: string[][] = [];
    let pageToken = '';
    do {
      const page = await list({ ...request, pageToken });
      pages.push(page.records.map((record) => record.requestId));
      pageToken = page.nextPageToken;
    } while (pageToken !== '' && pages.length < 20);
    return pages;
  }
  const idsWhere = (keep: (row: SeededRequest) => boolean) => newestFirst.filter(keep).map((row) => row.requestId);

  it('pages newest first without repeating or skipping a record', async () => {
    const pages = await allPages({ pageSize: 3 });
    expect(pages.map((page) => page.length)).toEqual([3, 3, 3, 1]);
    expect(pages.flat()).toEqual(idsWhere(() => true));
    expect(await allPages({ pageSize: 10 })).toEqual([idsWhere(() => true)]);
    expect(await allPages({ pageSize: 0 })).toEqual([idsWhere(() => true)]);
    expect(await list({ organisationId: uniqueId('nobody') })).toEqual({ records: [], nextPageToken: '' });
  });

  it('breaks ties of one instant by request id, newest first', async () => {
    const tiedOrganisation = uniqueId('org-tied');
    for (const suffix of ['b', 'a', 'c']) {
      await insert({ ...seeded[0]!, requestId: `tied-${suffix}`, organisationId: tiedOrganisation });
    }
    const pages: string[] = [];
    let pageToken = '';
    do {
      const page = await list({ organisationId: tiedOrganisation, pageSize: 1, pageToken });
      pages.push(...page.records.map((record) => record.requestId));
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
    expect(pages).toEqual(['tied-c', 'tied-b', 'tied-a']);
  });

  it('filters by project, model, surface and status (any, a class or exact)', async () => {
    expect((await allPages({ projectId: 'project-odd', pageSize: 2 })).flat()).toEqual(idsWhere((row) => row.projectId === 'project-odd'));
    expect((await allPages({ modelSlug: 'model-b' })).flat()).toEqual(idsWhere((row) => row.modelSlug === 'model-b'));
    expect((await allPages({ surface: 'responses' })).flat()).toEqual(idsWhere((row) => row.surface === 'responses'));
    const statusesOf = async (status: number) => (await list({ status })).records.map((record) => record.status);
    expect(await statusesOf(2)).toEqual([200, 200, 200, 200]);
    expect(await statusesOf(4)).toEqual([404, 429, 402, 401]);
    expect(await statusesOf(5)).toEqual([503, 502]);
    expect(await statusesOf(402)).toEqual([402]);
    expect(await statusesOf(418)).toEqual([]);
    expect((await allPages({ status: 4, projectId: 'project-even', pageSize: 1 })).flat())
      .toEqual(idsWhere((row) => row.status >= 400 && row.status < 500 && row.projectId === 'project-even'));
  });

  it('limits to a window on started_at: from inclusive, to exclusive', async () => {
    const third = seeded[2]!;
    const fromThird = await list({ fromMs: BigInt(third.startedAtMs) });
    expect(fromThird.records.map((record) => record.requestId)).toEqual(idsWhere((row) => row.startedAtMs >= third.startedAtMs));
    const beforeThird = await list({ toMs: BigInt(third.startedAtMs) });
    expect(beforeThird.records.map((record) => record.requestId)).toEqual(idsWhere((row) => row.startedAtMs < third.startedAtMs));
    const onlyThird = await list({ fromMs: BigInt(third.startedAtMs), toMs: BigInt(third.startedAtMs) + 1n });
    expect(onlyThird.records.map((record) => record.requestId)).toEqual([third.requestId]);
  });

  it('answers every field of a record, token classes included, and GetRequest reads it by id', async () => {
    const first = seeded[0]!;
    const expected: ledgerV1.RequestRecord = {
      requestId: first.requestId, organisationId, projectId: 'project-even', surface: 'responses', modelSlug: 'model-a',
      status: 200, errorCode: '', stream: false, startedAtMs: BigInt(first.startedAtMs), latencyMs: 1234,
      inputTokens: 1000n, outputTokens: 20n, costMicros: 3n,
      tokenClasses: [
        { tokenClass: 'input', tokens: 100n, costMicros: 1n, providerCostMicros: 0n },
        { tokenClass: 'cached_input', tokens: 900n, costMicros: 1n, providerCostMicros: 0n },
        { tokenClass: 'output', tokens: 20n, costMicros: 1n, providerCostMicros: 0n },
      ],
    };
    expect((await get(first.requestId)).record).toEqual(expected);
    const listed = (await list({ toMs: BigInt(first.startedAtMs) + 1n })).records;
    expect(listed).toEqual([expected]);

    const streamed = seeded[5]!;
    expect((await get(streamed.requestId)).record).toMatchObject({
      status: 502, errorCode: 'upstream_error', stream: true, timeToFirstTokenMs: 321, costMicros: 8n, tokenClasses: [],
    });
  });

  it('does not find a request of another organisation, nor one never recorded', async () => {
    expect((await get(`req-other-${otherOrganisationId}`)).record).toBeUndefined();
    expect((await get(`req-other-${otherOrganisationId}`, otherOrganisationId)).record?.requestId).toBe(`req-other-${otherOrganisationId}`);
    expect((await get('never-recorded')).record).toBeUndefined();
  });

  it('answers malformed reads with INVALID_ARGUMENT and a message we wrote', async () => {
    const refusals: Array<[() => Promise<unknown>, string]> = [
      [() => list({ organisationId: '' }), 'organisation_id must not be empty'],
      [() => list({ pageSize: 501 }), 'page_size must be between 1 and 500'],
      [() => list({ surface: 'completions' }), 'surface must be one of'],
      [() => list({ status: 3 }), 'status must be 0 (any), 2, 4 or 5'],
      [() => list({ status: 600 }), 'status must be 0 (any), 2, 4 or 5'],
      [() => list({ pageToken: 'bm90LWEtdG9rZW4' }), 'page_token is not a token this service issued'],
      [() => list({ fromMs: 2_000n, toMs: 1_000n }), 'from_ms must be before to_ms'],
      [() => list({ projectId: 'has space' }), 'project_id must be printable ASCII'],
      [() => get(''), 'request_id must not be empty'],
    ];
    for (const [call, message] of refusals) {
      const error = await call().then(() => undefined, (caught: unknown) => caught as ServiceError);
      expect(error?.code, message).toBe(GrpcStatus.INVALID_ARGUMENT);
      expect(error?.details).toContain(message);
      expect(error?.metadata.get('x-gateway-error-code')).toEqual(['invalid_request']);
    }
  });

  it('is refused to the proxy identity (an admin read)', async () => {
    const error = await callUnary(ledger.client.listRequests, ledger.client, ledgerV1.ListRequestsRequest.fromPartial({ organisationId }), callDeadlineMs)
      .then(() => undefined, (caught: unknown) => caught as ServiceError);
    expect(error?.code).toBe(GrpcStatus.PERMISSION_DENIED);
  });
});
