import { createLogger } from '@gateway/logger';
import { status as GrpcStatus } from '@grpc/grpc-js';
import type { ledgerV1 } from '@gateway/contracts';
import { describe, expect, it } from 'vitest';
import { RequestLogRecorder, requestLogSurface, requestRecordOf } from './request-log-recorder.ts';

/** Why the recorder gave records up (its onDropped's first argument). */
type RequestLogDropReason = 'buffer_full' | 'refused';

const logger = createLogger('proxy', 'silent');

/** A record whose request id is `id` (the other fields do not matter to the buffer). */
function recordNamed(id: string): ledgerV1.RequestRecord {
  return requestRecordOf({
    requestId: id, organisationId: 'org', projectId: 'proj', surface: 'chat_completions', model: 'm', status: 200, errorCode: undefined,
    stream: false, startedAtMs: 0, firstByteAtMs: undefined, endedAtMs: 1, promptTokens: undefined, completionTokens: undefined,
    costMicros: undefined, classes: undefined,
  });
}

/** A ledger stand-in that answers each batch as `answer` says, keeping what it took. */
function ledgerThat(answer: (batch: ledgerV1.RequestRecord[]) => 'ok' | 'unavailable' | 'invalid') {
  const taken: string[][] = [];
  const send = async (batch: ledgerV1.RequestRecord[]) => {
    const outcome = answer(batch);
    if (outcome === 'unavailable') throw Object.assign(new Error('ledger away'), { code: GrpcStatus.UNAVAILABLE });
    if (outcome === 'invalid') throw Object.assign(new Error('malformed'), { code: GrpcStatus.INVALID_ARGUMENT });
    taken.push(batch.map((record) => record.requestId));
  };
  return { send, taken };
}

describe('RequestLogRecorder', () => {
  it('sends full batches as they fill and the rest at close, in order, each record once', async () => {
    const ledger = ledgerThat(() => 'ok');
    const recorder = new RequestLogRecorder({ send: ledger.send, logger, batchSize: 3 });
    for (const id of ['a', 'b', 'c', 'd', 'e']) recorder.add(recordNamed(id));
    await recorder.close(1_000);
    expect(ledger.taken).toEqual([['a', 'b', 'c'], ['d', 'e']]);
    expect(recorder.buffered).toBe(0);
  });

  it('keeps a batch the ledger did not take and sends it again, dropping the oldest past the bound (counted)', async () => {
    let away = true;
    const ledger = ledgerThat(() => (away ? 'unavailable' : 'ok'));
    const dropped: Array<[RequestLogDropReason, number]> = [];
    const recorder = new RequestLogRecorder({ send: ledger.send, logger, batchSize: 2, maxBuffered: 4, onDropped: (reason, count) => dropped.push([reason, count]) });
    for (const id of ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']) recorder.add(recordNamed(id));
    // Let the failed sends come back to the buffer.
    await new Promise((resolve) => setImmediate(resolve));
    expect(recorder.buffered).toBe(4);
    expect(dropped.reduce((sum, [, count]) => sum + count, 0)).toBe(2);
    expect(dropped.every(([reason]) => reason === 'buffer_full')).toBe(true);
    away = false;
    await recorder.close(1_000);
    // The newest four, in order; the two oldest were the ones given up.
    expect(ledger.taken.flat()).toEqual(['r3', 'r4', 'r5', 'r6']);
  });

  it('drops a batch the ledger refused as malformed (sending it again cannot help) and goes on', async () => {
    const ledger = ledgerThat((batch) => (batch.some((record) => record.requestId === 'bad') ? 'invalid' : 'ok'));
    const dropped: Array<[RequestLogDropReason, number]> = [];
    const recorder = new RequestLogRecorder({ send: ledger.send, logger, batchSize: 2, onDropped: (reason, count) => dropped.push([reason, count]) });
    for (const id of ['bad', 'x', 'y']) recorder.add(recordNamed(id));
    await recorder.close(1_000);
    expect(dropped).toEqual([['refused', 2]]);
    expect(ledger.taken).toEqual([['y']]);
  });

  it('gives up what the ledger will not take at close, counted', async () => {
    const ledger = ledgerThat(() => 'unavailable');
    const dropped: Array<[RequestLogDropReason, number]> = [];
    const recorder = new RequestLogRecorder({ send: ledger.send, logger, onDropped: (reason, count) => dropped.push([reason, count]) });
    recorder.add(recordNamed('lost'));
    await recorder.close(1_000);
    expect(dropped).toEqual([['buffer_full', 1]]);
    expect(recorder.buffered).toBe(0);
  });
});

describe('requestRecordOf', () => {
  it('keeps the figures a Settle carried, times in whole ms rounded up, and a model slug the ledger accepts', () => {
    const record = requestRecordOf({
      requestId: 'req', organisationId: 'org', projectId: 'proj', surface: 'messages', model: `bad\u0000${'m'.repeat(300)}`, status: 402,
      errorCode: 'insufficient_balance', stream: true, startedAtMs: 1_000, firstByteAtMs: 1_000.2, endedAtMs: 1_010.4,
      promptTokens: 12, completionTokens: 3, costMicros: 9_007_199_254_740_993n,
      classes: [{ tokenClass: 'cached_input', tokens: 12, costMicros: 9_007_199_254_740_993n, providerCostMicros: 1n }],
    });
    expect(record).toMatchObject({
      surface: 'messages', status: 402, errorCode: 'insufficient_balance', stream: true, latencyMs: 11, timeToFirstTokenMs: 1,
      inputTokens: 12n, outputTokens: 3n, costMicros: 9_007_199_254_740_993n,
      tokenClasses: [{ tokenClass: 'cached_input', tokens: 12n, costMicros: 9_007_199_254_740_993n, providerCostMicros: 1n }],
    });
    expect(record.modelSlug).toBe(`bad${'m'.repeat(196)}`);
    expect(record.startedAtMs).toBeGreaterThan(0n);
  });

  it('names the four surfaces and no other route', () => {
    expect(['/v1/chat/completions', '/v1/responses', '/v1/embeddings', '/v1/messages', '/v1/messages/count_tokens', '/v1/models'].map((route) => requestLogSurface(route as never)))
      .toEqual(['chat_completions', 'responses', 'embeddings', 'messages', undefined, undefined]);
  });
});
