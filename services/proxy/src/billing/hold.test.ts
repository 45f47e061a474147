import { describe, expect, it } from 'vitest';
import { GatewayError, toHttpError } from '@gateway/errors';
import { createLogger } from '@gateway/logger';
import { createServiceMetrics, type ProxyMetrics } from '@gateway/telemetry';
import { Writable } from 'node:stream';
import type {
  AcquireGrantAnswer, AdjustGrantAnswer, BillingOwner, CheckpointAnswer, Ledger, ReleaseAnswer, ReleaseOrder, ReserveAnswer, ReserveOrder, SettleAnswer, SettleOrder,
} from '../domain/ledger-port.ts';
import type { UpstreamFailure } from '../domain/upstream-failure.ts';
import { ProxyTelemetry } from '../telemetry/request-observer.ts';
import type { CheckpointDue } from '../domain/stream-meter.ts';
import { GrantBook } from './grant-book.ts';
import { Hold, type BillingInput, type HoldDeps } from './hold.ts';

/** An in-memory Ledger port that answers each Reserve from a script and records what it was sent. */
class ScriptedLedger implements Ledger {
  readonly reserves: ReserveOrder[] = [];
  readonly settles: SettleOrder[] = [];
  readonly releases: ReleaseOrder[] = [];
  settlesInFlight = false;
  readonly answers: Array<ReserveAnswer | Error>;
  readonly grants = undefined;
  recallWaitMs = 0;
  constructor(answers: Array<ReserveAnswer | Error>) {
    this.answers = answers;
  }
  async reserve(order: ReserveOrder): Promise<ReserveAnswer> {
    this.reserves.push(order);
    const answer = this.answers.shift() ?? { outcome: 'ok', transient: false, detail: '', grantsRecalled: 0, liftable: true };
    if (answer instanceof Error) throw answer;
    return answer;
  }
  async checkpoint(): Promise<CheckpointAnswer> { return { outcome: 'ok', detail: '' }; }
  async settle(order: SettleOrder, _owner: BillingOwner): Promise<SettleAnswer> {
    this.settles.push(order);
    return { outcome: 'ok', debitedMicros: order.costMicros, detail: '' };
  }
  async release(order: ReleaseOrder, _owner: BillingOwner): Promise<ReleaseAnswer> {
    this.releases.push(order);
    return { outcome: 'ok', detail: '' };
  }
  settlesBacklogged(): boolean { return false; }
  async waitForSettleRoom(): Promise<boolean> { return true; }
  async waitForSettlesOf(): Promise<boolean> { return this.settlesInFlight; }
  async acquireGrant(): Promise<AcquireGrantAnswer> { throw new Error('no grants in this test'); }
  async adjustGrant(): Promise<AdjustGrantAnswer> { throw new Error('no grants in this test'); }
  onRecall(): void {}
}

function setup(answers: Array<ReserveAnswer | Error>): {
  ledger: ScriptedLedger; deps: HoldDeps; input: BillingInput; plan: { amountMicros: bigint }; background: Promise<unknown>[]; metrics: ProxyMetrics;
} {
  const ledger = new ScriptedLedger(answers);
  const metrics = createServiceMetrics('proxy');
  const background: Promise<unknown>[] = [];
  const deps: HoldDeps = {
    ledger, reserveTtlMs: 600_000, logger: createLogger('proxy', 'silent', new Writable({ write(_chunk, _encoding, done) { done(); } })),
    background: (work) => { background.push(work); },
  };
  const input = {
    requestId: 'req-1', requestUuid: 'uuid-1', log: {},
    observer: new ProxyTelemetry(metrics).startRequest('/v1/chat/completions', 'POST', 'req-1', performance.now()),
    caller: { organisation: { id: 'org', billingMode: 'internal' }, project: { id: 'org-project' } },
    model: {
      slug: 'chat', tokenizer: 'cl100k_base', inputPriceMicrosPerMtok: 1_000_000n, outputPriceMicrosPerMtok: 2_000_000n,
      providerInputCostMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 0n,
    },
  } as unknown as BillingInput;
  // The Reserve a plan of 10 prompt tokens and 5 output tokens makes at these prices; the reservation is res_uuid-1.
  const plan = { amountMicros: 20n };
  return { ledger, deps, input, plan, background, metrics };
}

/** The proxyReserves series of a registry, as `path/outcome` → count. */
async function reservesCounted(metrics: ProxyMetrics): Promise<Record<string, number>> {
  const counted: Record<string, number> = {};
  for (const { labels, value } of (await metrics.proxyReserves.get()).values) counted[`${labels.path}/${labels.outcome}`] = value;
  return counted;
}

async function statusOf(promise: Promise<unknown>): Promise<{ status: number; code: string }> {
  const error = await promise.then(() => undefined, (caught: unknown) => caught);
  expect(error).toBeInstanceOf(GatewayError);
  return { status: toHttpError(error).status, code: (error as GatewayError).code };
}

const answer = (outcome: ReserveAnswer['outcome'], transient: boolean, grantsRecalled = 0): ReserveAnswer => ({ outcome, transient, detail: 'why', grantsRecalled, liftable: true });

describe('Hold.open: the ledger\'s answer to HTTP', () => {
  it('holds an OK Reserve in the caller\'s billing mode and logs what it held', async () => {
    const { ledger, deps, input, plan, metrics } = setup([]);
    await Hold.open(deps, input, plan.amountMicros);
    expect(ledger.reserves).toEqual([{
      reservationId: 'res_uuid-1', organisationId: 'org', projectId: 'org-project', billingMode: 'internal', amountMicros: 20n, ttlMs: 600_000, modelSlug: 'chat',
    }]);
    expect(input.log.reservedMicros).toBe(20n);
    expect(await reservesCounted(metrics)).toEqual({ 'exact/held': 1 });
  });

  it('answers 402 for money, 503 for what retrying can lift, 500 for what it cannot, reading the transient flag', async () => {
    // The last column is the proxyReserves outcome the refusal is counted under.
    const cases: Array<[ReserveAnswer, number, string, string]> = [
      [answer('insufficient_balance', true), 402, 'insufficient_balance', 'insufficient_balance'],
      [answer('project_budget_exceeded', true), 402, 'budget_exceeded', 'budget_exceeded'],
      // An account not opened yet: the same Reserve succeeds once it is (the contract's table says transient).
      [answer('organisation_unknown', true), 503, 'service_unavailable', 'error'],
      // Our own Release reached the ledger first: a new request gets a new reservation id.
      [answer('released', false), 503, 'service_unavailable', 'error'],
      [answer('idempotency_conflict', false), 500, 'internal_error', 'error'],
      [answer('invalid_argument', false), 500, 'internal_error', 'error'],
      // The flag decides, not the name: the same outcome called transient is a 503.
      [answer('invalid_argument', true), 503, 'service_unavailable', 'error'],
      // A result this build does not know is a contract fault, whatever the table guesses.
      [answer('unrecognized', true), 500, 'internal_error', 'error'],
    ];
    for (const [reserved, status, code, counted] of cases) {
      const { deps, input, plan, metrics } = setup([reserved]);
      expect(await statusOf(Hold.open(deps, input, plan.amountMicros)), reserved.outcome).toEqual({ status, code });
      expect(await reservesCounted(metrics), reserved.outcome).toEqual({ [`exact/${counted}`]: 1 });
    }
  });

  it('tries a Reserve refused for money once more after the organisation\'s Settles in flight', async () => {
    const { ledger, deps, input, plan } = setup([answer('insufficient_balance', true), answer('ok', false)]);
    ledger.settlesInFlight = true;
    await Hold.open(deps, input, plan.amountMicros);
    expect(ledger.reserves).toHaveLength(2);
    const refused = setup([answer('organisation_unknown', true), answer('ok', false)]);
    refused.ledger.settlesInFlight = true;
    expect((await statusOf(Hold.open(refused.deps, refused.input, refused.plan.amountMicros))).status).toBe(503);
    expect(refused.ledger.reserves).toHaveLength(1);
  });

  it('answers a refusal no hold could lift (liftable false) at once: no wait for Settles in flight, no retry while grants are recalled', async () => {
    const final: ReserveAnswer = { ...answer('insufficient_balance', true, 2), liftable: false };
    const { ledger, deps, input, plan } = setup([final, answer('ok', false)]);
    ledger.settlesInFlight = true;
    expect(await statusOf(Hold.open(deps, input, plan.amountMicros))).toEqual({ status: 402, code: 'insufficient_balance' });
    expect(ledger.reserves).toHaveLength(1);
  });

  it('releases a Reserve whose call failed (its outcome is unknown) and answers 503', async () => {
    const { ledger, deps, input, plan, background, metrics } = setup([new GatewayError('service_unavailable', { internalMessage: 'ledger down' })]);
    expect((await statusOf(Hold.open(deps, input, plan.amountMicros))).status).toBe(503);
    expect(await reservesCounted(metrics)).toEqual({ 'exact/ledger_unavailable': 1 });
    await Promise.all(background);
    expect(ledger.releases).toEqual([{ reservationId: 'res_uuid-1', reason: 'reserve_outcome_unknown' }]);
  });
});

describe('Hold.fail: an upstream failure\'s error and money', () => {
  it('releases what certainly reached no upstream and settles zero usage for everything else (NOTHING_FREE)', async () => {
    const cases: Array<[UpstreamFailure, number, string, 'release' | 'settle']> = [
      [{ kind: 'unreachable', reason: 'ECONNREFUSED' }, 502, 'upstream_error', 'release'],
      [{ kind: 'timeout', reason: 'first byte' }, 504, 'upstream_timeout', 'settle'],
      [{ kind: 'http_error', statusCode: 529 }, 502, 'upstream_error', 'settle'],
      [{ kind: 'failed', reason: 'reset' }, 502, 'upstream_error', 'settle'],
      [{ kind: 'unusable_answer' }, 502, 'upstream_error', 'settle'],
    ];
    for (const [failure, status, code, money] of cases) {
      const { ledger, deps, input, plan, background } = setup([]);
      const hold = await Hold.open(deps, input, plan.amountMicros);
      const error = hold.fail(failure);
      expect({ status: toHttpError(error).status, code: error.code }, failure.kind).toEqual({ status, code });
      await Promise.all(background);
      if (money === 'release') {
        expect(ledger.releases).toEqual([{ reservationId: 'res_uuid-1', reason: 'upstream_unreachable' }]);
        expect(ledger.settles).toHaveLength(0);
      } else {
        expect(ledger.releases).toHaveLength(0);
        expect(ledger.settles).toMatchObject([{ reservationId: 'res_uuid-1', usage: { promptTokens: 0, completionTokens: 0 }, costMicros: 0n, usageSource: 'gateway_estimate' }]);
      }
      // The upstream's words never reach the client.
      expect(JSON.stringify(toHttpError(error).body)).not.toMatch(/ECONNREFUSED|first byte|529|reset/);
    }
  });
});

describe('Hold: one outcome per request, and the grant book behind it', () => {
  it('sends one outcome only: a second settle or release is refused in memory, and no checkpoint follows (ONE_OUTCOME)', async () => {
    const { ledger, deps, input, plan, background } = setup([]);
    const hold = await Hold.open(deps, input, plan.amountMicros);
    const error = hold.fail({ kind: 'unreachable', reason: 'ECONNREFUSED' });
    expect(error.code).toBe('upstream_error');
    await Promise.all(background);
    await hold.settle(hold.price({ promptTokens: 1, completionTokens: 1 }), 'upstream');
    await hold.release('again');
    await hold.checkpoint({ sequence: 1n, usage: { promptTokens: 1, completionTokens: 1 } } as CheckpointDue, 60_000);
    expect(ledger.releases).toEqual([{ reservationId: 'res_uuid-1', reason: 'upstream_unreachable' }]);
    expect(ledger.settles).toHaveLength(0);
  });

  it('carves from a grant without a ledger Reserve, gives a released carve back to the grant, and names the grant on a Settle', async () => {
    const { ledger, deps, input, plan } = setup([]);
    const grants = new GrantBook({
      ledger: {
        acquireGrant: async (order) => ({ outcome: 'ok', grantedMicros: order.wantMicros, detail: '' }),
        adjustGrant: async () => ({ outcome: 'ok', remainingMicros: 0n, recalled: false, detail: '' }),
      },
      logger: deps.logger, ownerId: 'proxy-1', ttlMs: 60_000, windowMs: 1_000, idleReturnMs: 60_000, checkpointIntervalMs: 1_000, tickMs: 0,
    });
    const carved = { ...deps, grants };
    const released = await Hold.open(carved, input, plan.amountMicros);
    const heldBefore = grants.uncarvedMicros();
    await released.release('upstream_unreachable');
    expect(grants.uncarvedMicros()).toBe(heldBefore + plan.amountMicros);
    const settled = await Hold.open(carved, input, plan.amountMicros);
    await settled.settle(settled.price({ promptTokens: 10, completionTokens: 0 }), 'upstream');
    expect(ledger.reserves).toHaveLength(0);
    expect(ledger.releases).toHaveLength(0);
    expect(ledger.settles).toMatchObject([{ reservationId: 'res_uuid-1', carve: { reservedMicros: 20n } }]);
    await grants.closeAll();
  });
});
