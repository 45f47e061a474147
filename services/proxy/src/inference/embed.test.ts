import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GatewayError, toHttpError } from '@gateway/errors';
import { createLogger } from '@gateway/logger';
import { createServiceMetrics } from '@gateway/telemetry';
import type { GatewayModelEntry } from '../domain/config-snapshot.ts';
import type {
  AcquireGrantAnswer, AdjustGrantAnswer, CheckpointAnswer, Ledger, ReleaseAnswer, ReleaseOrder, ReserveAnswer, ReserveOrder, SettleAnswer, SettleOrder,
} from '../domain/ledger-port.ts';
import { ProxyTelemetry } from '../telemetry/request-observer.ts';
import { openAiCompatibleAdapter } from '../upstreams/openai-compatible/adapter.ts';
import type { UpstreamOutcome } from '../upstreams/upstream-outcome.ts';
import type { UpstreamPort } from './complete-chat.ts';
import { embed, type CompletedEmbeddings, type EmbedInput } from './embed.ts';

/** An in-memory Ledger port that holds every Reserve and records what it was sent. */
class RecordingLedger implements Ledger {
  readonly reserves: ReserveOrder[] = [];
  readonly settles: SettleOrder[] = [];
  readonly releases: ReleaseOrder[] = [];
  readonly grants = undefined;
  readonly recallWaitMs = 0;
  async reserve(order: ReserveOrder): Promise<ReserveAnswer> {
    this.reserves.push(order);
    return { outcome: 'ok', transient: false, detail: '', grantsRecalled: 0, liftable: true };
  }
  async checkpoint(): Promise<CheckpointAnswer> { return { outcome: 'ok', detail: '' }; }
  async settle(order: SettleOrder): Promise<SettleAnswer> {
    this.settles.push(order);
    return { outcome: 'ok', debitedMicros: order.costMicros, detail: '' };
  }
  async release(order: ReleaseOrder): Promise<ReleaseAnswer> {
    this.releases.push(order);
    return { outcome: 'ok', detail: '' };
  }
  settlesBacklogged(): boolean { return false; }
  async waitForSettleRoom(): Promise<boolean> { return true; }
  async waitForSettlesOf(): Promise<boolean> { return false; }
  async acquireGrant(): Promise<AcquireGrantAnswer> { throw new Error('no grants in this test'); }
  async adjustGrant(): Promise<AdjustGrantAnswer> { throw new Error('no grants in this test'); }
  onRecall(): void {}
}

/** Prices in µ₹ per million tokens: odd, so every ceil shows. */
const model = {
  slug: 'embed', kind: 'embedding', tokenizer: 'cl100k_base', maxContextTokens: 8192, defaultMaxTokens: 1,
  inputPriceMicrosPerMtok: 2_500_001n, outputPriceMicrosPerMtok: 0n, providerInputCostMicrosPerMtok: 1_000_001n, providerOutputCostMicrosPerMtok: 0n,
  upstream: { providerKind: 'openai_compatible', baseUrl: 'https://api.example.com/v1', model: 'vendor-embed', apiKey: '' },
} as unknown as GatewayModelEntry;

/** Runs embed (two inputs) against a ledger that holds everything and an upstream that answers `outcome`. */
async function run(
  inputTokens: number, outcome: UpstreamOutcome, options: { dimensions?: number; upstreamModel?: string } = {},
): Promise<{ ledger: RecordingLedger; completed?: CompletedEmbeddings; error?: GatewayError }> {
  const ledger = new RecordingLedger();
  const background: Promise<unknown>[] = [];
  const upstream: UpstreamPort = {
    send: async () => outcome,
    openStream: async () => { throw new Error('embeddings never stream'); },
  };
  const input: EmbedInput = {
    requestId: 'req-1', requestUuid: 'uuid-1', log: {},
    observer: new ProxyTelemetry(createServiceMetrics('proxy')).startRequest('/v1/embeddings', 'POST', 'req-1', performance.now()),
    caller: { organisation: { id: 'org', billingMode: 'commercial' }, project: { id: 'org-project' } },
    model: { ...model, upstream: { ...model.upstream, model: options.upstreamModel ?? model.upstream.model } }, embeddings: openAiCompatibleAdapter.embeddings!,
    request: { model: 'embed', input: ['a', 'b'], dimensions: options.dimensions, encodingFormat: 'float', user: undefined },
    inputTokens,
  } as unknown as EmbedInput;
  let completed: CompletedEmbeddings | undefined;
  try {
    await embed({
      ledger, upstream, reserveTtlMs: 600_000, background: (work) => { background.push(work); },
      logger: createLogger('proxy', 'silent', new Writable({ write(_chunk, _encoding, done) { done(); } })),
    }, input, (answer) => { completed = answer; });
  } catch (error) {
    await Promise.all(background);
    return { ledger, error: error as GatewayError };
  }
  return { ledger, ...(completed === undefined ? {} : { completed }) };
}

describe('embed', () => {
  const answer = (promptTokens?: number) => ({
    kind: 'response' as const, statusCode: 200,
    json: { data: [{ index: 1, embedding: [3, 4] }, { index: 0, embedding: [1, 2] }], ...(promptTokens === undefined ? {} : { usage: { prompt_tokens: promptTokens } }) },
  });

  it("reserves an OpenAI model's priced count exactly, answers the vectors in input order, and settles the reported usage", async () => {
    const { ledger, completed } = await run(10, answer(9), { upstreamModel: 'text-embedding-3-small' });
    expect(ledger.reserves.map((order) => order.amountMicros)).toEqual([26n]); // ceil(10 × 2.500001)
    expect(completed).toEqual({ vectors: [[1, 2], [3, 4]], usage: { promptTokens: 9, completionTokens: 0 }, costMicros: 23n });
    expect(ledger.settles).toMatchObject([{ usage: { promptTokens: 9, completionTokens: 0 }, costMicros: 23n, providerCostMicros: 10n, usageSource: 'upstream' }]);
  });

  it("reserves another model's count with its margin, and settles the upstream's higher count in full", async () => {
    // 10 counted, 2 inputs: ceil(12.5) + 4 = 17 tokens, ceil(17 × 2.500001) = 43 µ₹. The upstream counts 17 (a BERT count).
    const { ledger, completed } = await run(10, answer(17), { upstreamModel: 'BAAI/bge-base-en-v1.5' });
    expect(ledger.reserves.map((order) => order.amountMicros)).toEqual([43n]);
    expect(completed!.usage).toEqual({ promptTokens: 17, completionTokens: 0 });
    expect(ledger.settles).toMatchObject([{ usage: { promptTokens: 17, completionTokens: 0 }, costMicros: 43n, providerCostMicros: 18n, usageSource: 'upstream' }]);
  });

  it("settles the Reserve's tokens, and prices the provider on the upstream's, when the upstream counts past the margin", async () => {
    const { ledger, completed } = await run(10, answer(100), { upstreamModel: 'BAAI/bge-base-en-v1.5' });
    expect(completed!.usage).toEqual({ promptTokens: 17, completionTokens: 0 });
    expect(ledger.settles).toMatchObject([{ usage: { promptTokens: 17, completionTokens: 0 }, costMicros: 43n, providerCostMicros: 101n, usageSource: 'gateway_estimate' }]);
  });

  it("settles the gateway's count without the margin when the upstream reports no usage", async () => {
    const { ledger } = await run(10, answer(), { upstreamModel: 'BAAI/bge-base-en-v1.5' });
    expect(ledger.reserves.map((order) => order.amountMicros)).toEqual([43n]);
    expect(ledger.settles).toMatchObject([{ usage: { promptTokens: 10, completionTokens: 0 }, costMicros: 26n, usageSource: 'gateway_estimate' }]);
  });

  it('answers vectors of the dimensions asked, decoded from base64', async () => {
    const base64 = Buffer.from(new Float32Array([0.5, -1.5, 2]).buffer).toString('base64');
    const { completed } = await run(10, { kind: 'response', statusCode: 200, json: { data: [{ embedding: base64 }, { embedding: base64 }] } }, { dimensions: 3 });
    expect(completed!.vectors).toEqual([[0.5, -1.5, 2], [0.5, -1.5, 2]]);
  });

  it('reserves at least 1 µ₹', async () => {
    const { ledger } = await run(0, { kind: 'response', statusCode: 200, json: { data: [{ embedding: [1] }, { embedding: [2] }] } }, { upstreamModel: 'text-embedding-3-small' });
    expect(ledger.reserves[0]!.amountMicros).toBe(1n);
  });

  it.each([
    ['fewer vectors than inputs', { data: [{ index: 0, embedding: [1] }] }],
    ['more vectors than inputs', { data: [{ index: 0, embedding: [1] }, { index: 1, embedding: [1] }, { index: 2, embedding: [1] }] }],
    ['an index twice', { data: [{ index: 0, embedding: [1] }, { index: 0, embedding: [1] }] }],
    ['an index past the inputs', { data: [{ index: 0, embedding: [1] }, { index: 2, embedding: [1] }] }],
    ['a malformed answer', { data: 'vectors' }],
    ['vectors of different lengths', { data: [{ index: 0, embedding: [1, 2] }, { index: 1, embedding: [1] }] }],
    ['vectors not of the dimensions asked', { data: [{ index: 0, embedding: [1, 2] }, { index: 1, embedding: [3, 4] }] }, 3],
    ['base64 vectors not of the dimensions asked', { data: [{ embedding: Buffer.alloc(8).toString('base64') }, { embedding: Buffer.alloc(8).toString('base64') }] }, 3],
  ])('answers 502 and settles zero usage for %s (it reached the upstream: NOTHING_FREE)', async (_name, json, dimensions?: number) => {
    const { ledger, completed, error } = await run(10, { kind: 'response', statusCode: 200, json }, dimensions === undefined ? {} : { dimensions });
    expect(completed).toBeUndefined();
    expect(toHttpError(error).status).toBe(502);
    expect(error!.code).toBe('upstream_error');
    expect(ledger.settles).toMatchObject([{ usage: { promptTokens: 0, completionTokens: 0 }, costMicros: 0n, usageSource: 'gateway_estimate' }]);
    expect(ledger.releases).toEqual([]);
  });

  it('releases the Reserve when the upstream could not be reached', async () => {
    const { ledger, error } = await run(10, { kind: 'unreachable', reason: 'ECONNREFUSED' });
    expect(toHttpError(error).status).toBe(502);
    expect(ledger.settles).toEqual([]);
    expect(ledger.releases).toEqual([{ reservationId: 'res_uuid-1', reason: 'upstream_unreachable' }]);
  });
});
