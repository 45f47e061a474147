/**
 * Nothing abandoned on scale-down: the ledger goes down while a proxy serves streams and
 * completions, so their Settles wait in its outbox; that proxy gets SIGTERM and hands them to the
 * shared outbox in Redis; the other proxy adopts them, and is stopped too, handing them on (no
 * replica left); the ledger comes back, a new proxy starts and settles them. No person acts. Then:
 * every served request has exactly one usage record, with the upstream's own figures (the real
 * Settle, not the expiry's estimate), and the balance moved by exactly their cost (CONSERVATION,
 * ONE_OUTCOME, NOTHING_FREE), besides the suite's common checks.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordFault } from './support/fault-table.ts';
import { startFaultGateway, type FaultGateway } from './support/fault-gateway.ts';
import { waitFor } from './support/fault-load.ts';
import { findLocalBinaries, startLocalPostgres, startLocalRedis, type LocalPostgres, type LocalRedis } from './support/local-servers.ts';
import { checkAfterFault, monitorBalance } from './support/money-checks.ts';

const binaries = findLocalBinaries();
const missing = binaries.problems.length > 0;
/** The stream every proxy hands over to and adopts from (outboxStreamKey's default: the fault proxies keep PROXY_REDIS_PREFIX's). */
const streamKey = 'gw:rpm:outbox';

const execFileAsync = promisify(execFile);

/** One command to the suite's Redis through redis-cli (beside redis-server): its reply lines. */
async function redisCommand(...args: string[]): Promise<string[]> {
  const { stdout } = await execFileAsync('redis-cli', ['-p', String(redis.port), ...args]);
  return stdout.split('\n').filter((line) => line !== '');
}
/** Entries in the shared outbox. */
const streamLength = async () => Number((await redisCommand('XLEN', streamKey))[0]);
/** Entries some consumer has read and not acknowledged (each XPENDING line set is 4 lines: id, consumer, idle, deliveries). */
const pendingCount = async () => (await redisCommand('XPENDING', streamKey, 'proxies', '-', '+', '100')).length / 4;

let postgres: LocalPostgres;
let redis: LocalRedis;
let gateway: FaultGateway;

/** One request as its client saw it. */
interface Served {
  requestId: string;
  stream: boolean;
  status: number;
  /** Reply words received. */
  words: number;
  /** `[DONE]` (a stream) or a parsed body (a completion) arrived. */
  complete: boolean;
  /** The client is done with it (read whole, or failed). */
  ended: boolean;
}

/** Sends one chat completion to proxy 0 and reads it whole. */
function send(requestId: string, stream: boolean, apiKey: string): Served {
  const served: Served = { requestId, stream, status: 0, words: 0, complete: false, ended: false };
  const directives = stream ? '[[fake:reply_words=40]] [[fake:chunk_delay_ms=100]]' : '[[fake:reply_words=8]] [[fake:delay_ms=2500]]';
  void (async () => {
    const response = await fetch(`${gateway.proxyBases[0]}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
      // max_tokens well above the reply, so no stream stops at its Reserve's cost (its estimate counts
      // about two tokens per `wN` word): each ends with the upstream's own usage.
      body: JSON.stringify({ model: gateway.modelSlug, max_tokens: 256, stream, ...(stream ? { stream_options: { include_usage: true } } : {}), messages: [{ role: 'user', content: `handover ${directives} [[fake:tag=${requestId}]]` }] }),
      signal: AbortSignal.timeout(30_000),
    });
    served.status = response.status;
    const text = await response.text();
    if (!stream) {
      served.words = (JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content.split(/\s+/).length;
      served.complete = true;
      return;
    }
    for (const frame of text.split('\n\n')) {
      const data = frame.split('\n').find((line) => line.startsWith('data: '))?.slice(6);
      if (data === '[DONE]') served.complete = true;
      else if (data !== undefined) served.words += ((JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> }).choices?.[0]?.delta?.content ?? '').split(/\s+/).filter(Boolean).length;
    }
  })().catch(() => { served.status ||= -1; }).finally(() => { served.ended = true; });
  return served;
}

/** The depth of a proxy's settle outbox, from its /readyz body; -1 when it does not answer. */
async function outboxDepth(index: number): Promise<number> {
  try {
    const response = await fetch(gateway.proxyBases[index]!.replace(/\/v1$/, '/readyz'), { signal: AbortSignal.timeout(2_000) });
    const body = await response.json() as { dependencies?: Record<string, string> };
    return Number(body.dependencies?.settle_outbox ?? -1);
  } catch {
    return -1;
  }
}

describe.skipIf(missing && process.env.CI !== 'true')('the settle outbox outlives its replica', () => {
  beforeAll(async () => {
    if (missing) throw new Error(`CI=true and the fault suite's binaries are missing: ${binaries.problems.join('; ')}`);
    postgres = await startLocalPostgres(binaries);
    redis = await startLocalRedis(binaries);
    gateway = await startFaultGateway({ postgres, redis, proxyCount: 2 });
  });

  afterAll(async () => {
    await gateway?.close();
    await redis?.destroy();
    await postgres?.destroy();
  });

  it('ledger down, requests served, SIGTERM every proxy, ledger back, a new proxy: every served request settled exactly once', async () => {
    const organisation = await gateway.createOrganisation('h8', 2_000_000n);
    const monitor = monitorBalance(gateway, organisation.id);
    const before = await gateway.balance(organisation.id);
    const problems: string[] = [];
    const steps: string[] = [];

    // Requests in flight on proxy 0 when the ledger goes: four 4 s streams and three 2.5 s completions.
    const requests = [
      ...Array.from({ length: 4 }, (_, i) => send(`h8-stream-${i}`, true, organisation.apiKey)),
      ...Array.from({ length: 3 }, (_, i) => send(`h8-json-${i}`, false, organisation.apiKey)),
    ];
    const reached = () => new Set(gateway.upstream.requests.map((r) => r.tag).filter((tag) => tag?.startsWith('h8-')));
    await waitFor('every request reached the upstream', () => reached().size === requests.length, 20_000);
    await gateway.kill(gateway.ledger, 'SIGKILL');
    await waitFor('every request served while the ledger is down', () => requests.every((r) => r.ended), 20_000);
    const served = requests.filter((r) => r.status === 200 && r.complete);
    steps.push(`${served.length}/${requests.length} served with the ledger down`);
    if (served.length !== requests.length) problems.push(`only ${served.length} of ${requests.length} requests were served: ${JSON.stringify(requests)}`);
    await waitFor('their Settles queued in proxy 0', async () => (await outboxDepth(0)) >= served.length, 10_000);

    // Scale-down of proxy 0: its outbox goes to Redis, proxy 1 adopts it.
    const exit0 = await gateway.kill(gateway.proxies[0]!, 'SIGTERM');
    if (exit0 !== 0) problems.push(`proxy 0 exited ${exit0}`);
    if (!gateway.proxies[0]!.output().includes('handed over to the shared outbox')) problems.push('proxy 0 did not hand its outbox over');
    steps.push(`proxy 0 SIGTERM: exit ${exit0}, stream length ${await streamLength()}`);
    await waitFor('proxy 1 adopted them', async () => (await outboxDepth(1)) >= served.length, 10_000);

    // Scale-down of proxy 1 too: nothing alive adopts; the entries wait in Redis.
    const exit1 = await gateway.kill(gateway.proxies[1]!, 'SIGTERM');
    if (exit1 !== 0) problems.push(`proxy 1 exited ${exit1}`);
    const waiting = await streamLength();
    const pendingAfterStop = await pendingCount();
    steps.push(`proxy 1 SIGTERM: exit ${exit1}, ${waiting} entries waiting, ${pendingAfterStop} pending under a consumer`);
    if (waiting !== served.length) problems.push(`${waiting} entries in the shared outbox, expected ${served.length}`);

    await gateway.startLedger();
    await gateway.startProxy(0);
    await waitFor('the new proxy settled them all', async () => (await streamLength()) === 0, 30_000);
    await gateway.startProxy(1);
    steps.push('ledger back, proxy 0 restarted: stream emptied');

    const report = await checkAfterFault({ gateway, postgres, organisationId: organisation.id, requestIdPrefix: 'h8', monitor });
    problems.push(...report.problems);
    for (const request of served) {
      const records = report.usage.recordsById.get(request.requestId) ?? [];
      if (records.length !== 1) problems.push(`${request.requestId}: ${records.length} usage records`);
      else if (records[0]!.outputTokens !== request.words || records[0]!.usageSource !== 'upstream') {
        problems.push(`${request.requestId}: record ${records[0]!.outputTokens} tokens (${records[0]!.usageSource}), client received ${request.words} words`);
      }
    }
    const after = await gateway.balance(organisation.id);
    const billedMicros = served.reduce((sum, request) => sum + (report.usage.recordsById.get(request.requestId)?.[0]?.debitedMicros ?? 0n), 0n);
    if (after.debitedMicros - before.debitedMicros !== billedMicros) problems.push(`debited ${after.debitedMicros - before.debitedMicros} µ₹, records ${billedMicros} µ₹`);
    if (before.availableMicros - after.availableMicros !== billedMicros) problems.push(`available fell ${before.availableMicros - after.availableMicros} µ₹, records ${billedMicros} µ₹`);
    steps.push(`billed ${billedMicros} µ₹ for ${served.length} requests; ${report.figures}`);

    recordFault({
      scenario: 'SIGTERM every proxy during a ledger outage',
      injected: 'SIGKILL of the ledger with 7 requests in flight on proxy 0; SIGTERM of proxy 0, then of proxy 1; ledger and proxy 0 started again',
      checked: [...steps, ...problems.map((p) => `FAILED: ${p}`)].join('; '),
      passed: problems.length === 0,
    });
    expect(problems, gateway.outputs()).toEqual([]);
  });
});
