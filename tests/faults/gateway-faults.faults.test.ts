/**
 * The gateway under faults: its own PostgreSQL cluster and Redis, the three services
 * as processes, a fake upstream that tags every request, and a bounded load of streaming and
 * non-streaming requests; then, one scenario at a time, a fault: kill -9 the ledger, restart
 * PostgreSQL, kill -9 and SIGTERM a proxy with live streams, stop Redis, stop the admin past
 * the staleness bound. After each, the money checks of support/money-checks.ts, and a row in
 * the fault table. Each scenario has its own organisation, so its money and usage stand alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordFault } from './support/fault-table.ts';
import { faultTimings, startFaultGateway, type FaultGateway, type FaultOrganisation } from './support/fault-gateway.ts';
import { startLoad, waitFor, type Load, type LoadRequest } from './support/fault-load.ts';
import { findLocalBinaries, startLocalPostgres, startLocalRedis, type LocalPostgres, type LocalRedis } from './support/local-servers.ts';
import { grpcStatus, probeCredit, type ProbeIdentity } from './support/ledger-grpc-probe.ts';
import { checkAfterFault, monitorBalance } from './support/money-checks.ts';
import { runLedgerVerify } from './support/fault-gateway.ts';

const binaries = findLocalBinaries();
const missing = binaries.problems.length > 0;
if (missing && process.env.CI !== 'true') {
  console.warn(`\n!!! The fault suite is SKIPPED: ${binaries.problems.join('; ')}\n`);
}

const streamWords = 40;
const chunkDelayMs = 100;
/** Words a stream had delivered by `atMs`, as the client received them. */
const wordsBy = (request: LoadRequest, atMs: number) => request.wordTimesMs.filter((t) => t <= atMs).length;
/**
 * How long the ledger, PostgreSQL and Redis outages last, ms. The duration is the fault, not a
 * wait for a state: long enough that requests in flight meet the outage and the proxies' retries,
 * outbox and reconnects run through it, short enough that reservations (RESERVE_TTL_MS 8 s) are
 * still held when it ends. Every wait around it (ready again, serving again) is a poll.
 */
const outageMs = 3_000;
/** Lets the outage last its length (see outageMs); used for nothing else. */
const outage = () => new Promise((resolve) => setTimeout(resolve, outageMs));

let postgres: LocalPostgres;
let redis: LocalRedis;
let gateway: FaultGateway;

/** What a fault did, for the table, and what it adds to the common checks. */
interface Injection {
  injected: string;
  /** Requests a SIGKILL of a proxy may leave without a record. */
  exempt?: Set<string>;
  /** Checks of the scenario itself: run after the common ones (the usage records are settled by then). */
  check?(records: Map<string, Array<{ outputTokens: number; usageSource: string }>>): { problems: string[]; figures: string };
  problems?: string[];
  figures?: string;
}

/** A chat completion outside the load (tagged with the scenario's prefix, so it is matched too); resolves with the status. */
let probeSequence = 0;
async function probe(proxyIndex: number, organisation: FaultOrganisation, prefix: string): Promise<number> {
  probeSequence += 1;
  const requestId = `${prefix}-probe-${probeSequence}`;
  try {
    const response = await fetch(`${gateway.proxyBases[proxyIndex]}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${organisation.apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ model: gateway.modelSlug, max_tokens: 16, messages: [{ role: 'user', content: `probe [[fake:reply_words=2]] [[fake:tag=${requestId}]]` }] }),
      signal: AbortSignal.timeout(5_000),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/** Starts whatever a failed scenario left stopped, so the next one begins whole. */
async function restoreEverything(): Promise<void> {
  const down = (child: { exitCode: number | null; signalCode: string | null }) => child.exitCode !== null || child.signalCode !== null;
  if (!(await postgres.query('SELECT 1').then(() => true, () => false))) await postgres.start();
  if (!redis.isRunning()) await redis.start();
  if (down(gateway.ledger.child)) await gateway.startLedger();
  if (down(gateway.admin.child)) await gateway.startAdmin();
  for (let index = 0; index < gateway.proxies.length; index += 1) if (down(gateway.proxies[index]!.child)) await gateway.startProxy(index);
}

/**
 * Runs one scenario: a fresh organisation, the load, a warm-up of completed requests, the fault,
 * more completed requests after recovery, then the checks; records the table row either way.
 */
async function runScenario(name: string, prefix: string, inject: (load: Load, organisation: FaultOrganisation) => Promise<Injection>): Promise<void> {
  const organisation = await gateway.createOrganisation(prefix, 2_000_000n);
  const monitor = monitorBalance(gateway, organisation.id);
  const load = startLoad({ proxyBases: gateway.proxyBases, apiKey: organisation.apiKey, model: gateway.modelSlug, requestIdPrefix: prefix, streamWords, chunkDelayMs });
  let injection: Injection | undefined;
  const problems: string[] = [];
  let figures = '';
  try {
    try {
      await waitFor('12 completed requests before the fault', () => load.completed() >= 12, 30_000);
      injection = await inject(load, organisation);
      const afterRecovery = load.completed();
      await waitFor('12 more completed requests after recovery', () => load.completed() >= afterRecovery + 12, 30_000);
    } finally {
      await load.stop();
    }
    const report = await checkAfterFault({ gateway, postgres, organisationId: organisation.id, requestIdPrefix: prefix, monitor, exempt: injection!.exempt });
    problems.push(...(injection!.problems ?? []), ...report.problems);
    const own = injection!.check?.(report.usage.recordsById);
    if (own !== undefined) problems.push(...own.problems);
    const served = load.requests.filter((r) => r.status === 200).length;
    const echoed = load.requests.filter((r) => r.status !== undefined && r.status !== 0 && r.echoedRequestId !== r.requestId).length;
    if (echoed > 0) problems.push(`${echoed} responses did not echo their x-request-id`);
    figures = [`${load.requests.length} requests (${served} × 200)`, injection!.figures, own?.figures, report.figures].filter(Boolean).join('; ');
  } catch (error) {
    problems.push((error as Error).message.split('\n')[0]!);
    await monitor.stop();
    await restoreEverything().catch((restoreError: unknown) => { problems.push(`could not restore the gateway: ${(restoreError as Error).message.split('\n')[0]}`); });
  }
  recordFault({ scenario: name, injected: injection?.injected ?? 'fault not injected', checked: [figures, ...problems.map((p) => `FAILED: ${p}`)].filter(Boolean).join('; '), passed: problems.length === 0 });
  expect(problems, gateway.outputs()).toEqual([]);
}

/** Waits until proxy 0 has live streams: at least two delivering, one of them past a checkpoint interval. */
async function waitForLiveStreams(load: Load): Promise<LoadRequest[]> {
  const live = () => load.open().filter((r) => r.proxyIndex === 0 && r.stream && r.status === 200 && r.wordTimesMs.length > 0);
  // One stream far enough past a checkpoint interval that the SIGKILL floor is more than its first chunk.
  const pastInterval = Math.ceil((faultTimings.checkpointIntervalMs + 1_000) / chunkDelayMs);
  await waitFor('live streams on proxy 0', () => live().length >= 2 && live().some((r) => r.wordTimesMs.length >= pastInterval), 30_000, 20);
  return live();
}

describe.skipIf(missing && process.env.CI !== 'true')('the gateway under faults: CONSERVATION, NO_OVERSPEND, EXPIRY and NOTHING_FREE after each', () => {
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

  it('kill -9 the ledger under load: nothing delivered goes unbilled', async () => {
    await runScenario('kill -9 ledger', 'f1', async (load) => {
      const open = load.open().length;
      const completed = load.completed();
      const killedAtMs = Date.now();
      await gateway.kill(gateway.ledger, 'SIGKILL');
      await outage();
      await gateway.startLedger();
      return { injected: `SIGKILL of the ledger after ${completed} completed requests (${open} open); restarted after ${outageMs} ms, ready ${Date.now() - killedAtMs} ms after the kill` };
    });
  });

  it('restart PostgreSQL under load: nothing delivered goes unbilled', async () => {
    await runScenario('restart PostgreSQL', 'f2', async (load) => {
      const open = load.open().length;
      const stoppedAtMs = Date.now();
      await postgres.stop();
      await outage();
      await postgres.start();
      return { injected: `pg_ctl stop -m fast with ${open} requests open; started again ${Date.now() - stoppedAtMs} ms later` };
    });
  });

  it('kill -9 a proxy with live streams: losses stay within the checkpoint bound', async () => {
    await runScenario('kill -9 proxy', 'f3', async (load) => {
      const live = await waitForLiveStreams(load);
      const settleWindowMs = 1_000;
      const killedAtMs = Date.now();
      // Everything of proxy 0 that was open, or had ended so recently that its Settle may still have been in the proxy's memory.
      const inFlight = load.requests.filter((r) => r.proxyIndex === 0 && (r.endedAtMs === undefined || r.endedAtMs >= killedAtMs - settleWindowMs));
      const openAtKill = new Set(inFlight.filter((r) => r.endedAtMs === undefined).map((r) => r.requestId));
      await gateway.kill(gateway.proxies[0]!, 'SIGKILL');
      await gateway.startProxy(0);
      // A stream whose first chunk left well before the kill had its first checkpoint; what it had
      // delivered one checkpoint interval (plus a chunk gap and the checkpoint's own trip) before the kill is the floor.
      const slackMs = 300;
      const streams = inFlight.filter((r) => openAtKill.has(r.requestId) && r.stream && r.wordTimesMs.length > 0 && r.wordTimesMs[0]! <= killedAtMs - slackMs);
      return {
        injected: `SIGKILL of proxy 0 with ${live.length} live streams (${streams.length} past their first chunk), ${inFlight.length} requests in flight on it; replaced at once`,
        // Everything the kill caught may lack a record (never have two): the common check exempts
        // it, and the streams past their first chunk are checked here. The ledger's expiry writes a
        // killed stream's record from its last checkpoint, under the request id the checkpoints
        // carried, so each stream is matched by request id like every other request; a record
        // without one is still a failure of the common check.
        exempt: new Set(inFlight.map((r) => r.requestId)),
        check(records) {
          const problems: string[] = [];
          const floorOf = (stream: LoadRequest) => Math.max(1, wordsBy(stream, killedAtMs - faultTimings.checkpointIntervalMs - chunkDelayMs - slackMs));
          const byId = streams.filter((stream) => records.has(stream.requestId));
          const withoutRecord = streams.filter((stream) => !records.has(stream.requestId));
          if (withoutRecord.length > 0) problems.push(`${withoutRecord.length} of ${streams.length} streams that had delivered their first chunk have no usage record under their request id (e.g. ${withoutRecord.slice(0, 5).map((s) => s.requestId).join(', ')})`);
          // Each word of the fake's reply is at least one token, so tokens >= words.
          for (const stream of byId) {
            const list = records.get(stream.requestId)!;
            if (list.length > 1) problems.push(`stream ${stream.requestId} has ${list.length} usage records`);
            if (list[0]!.outputTokens < floorOf(stream)) problems.push(`stream ${stream.requestId} charged ${list[0]!.outputTokens} output tokens < ${floorOf(stream)} words delivered ${faultTimings.checkpointIntervalMs} ms before the kill`);
          }
          // The proxy died before any Settle of these could carry the upstream's count: an
          // estimate means the ledger's expiry wrote it from a checkpoint.
          const fromExpiry = byId.filter((stream) => records.get(stream.requestId)![0]!.usageSource === 'gateway_estimate').length;
          const wordsAtKill = streams.reduce((sum, stream) => sum + wordsBy(stream, killedAtMs), 0);
          const floorWords = streams.reduce((sum, stream) => sum + floorOf(stream), 0);
          const chargedTokens = byId.reduce((sum, stream) => sum + records.get(stream.requestId)![0]!.outputTokens, 0);
          // Non-streaming replies the client received whose Settle died with the proxy: bounded by what was in flight.
          const lostJson = inFlight.filter((r) => !r.stream && r.complete && !records.has(r.requestId)).length;
          const jsonInFlight = inFlight.filter((r) => !r.stream).length;
          const otherOpen = inFlight.filter((r) => openAtKill.has(r.requestId) && !streams.includes(r) && records.has(r.requestId)).length;
          return {
            problems,
            figures: `killed streams: ${wordsAtKill} words delivered, floor ${floorWords}, charged ${chargedTokens} output tokens ` +
              `(${byId.length} of ${streams.length} records by request id, ${fromExpiry} of them written by the expiry from a checkpoint); ` +
              `non-streaming delivered without a record: ${lostJson} of ${jsonInFlight} in flight; other open requests with a record: ${otherOpen}`,
          };
        },
      };
    });
  });

  it('SIGTERM a proxy with live streams: every stream is settled', async () => {
    await runScenario('SIGTERM proxy', 'f4', async (load) => {
      const live = await waitForLiveStreams(load);
      const inFlight = load.open().filter((r) => r.proxyIndex === 0).length;
      const exitCode = await gateway.kill(gateway.proxies[0]!, 'SIGTERM');
      await gateway.startProxy(0);
      return {
        injected: `SIGTERM of proxy 0 with ${live.length} live streams, ${inFlight} requests in flight on it (grace ${faultTimings.proxyShutdownGraceMs} ms); replaced`,
        figures: `proxy exit code ${exitCode}`,
        problems: exitCode === 0 ? [] : [`the proxy exited ${exitCode} after SIGTERM`],
      };
    });
  });

  it('stop Redis under load, then start it again', async () => {
    await runScenario('stop Redis', 'f5', async (load, organisation) => {
      const before = load.requests.length;
      await redis.stop();
      await outage();
      const during = load.requests.slice(before);
      await redis.start();
      const startedAtMs = Date.now();
      await Promise.all(gateway.proxyBases.map((_, index) => waitFor(`proxy ${index} serving after Redis returned`, async () => (await probe(index, organisation, 'f5')) === 200, 10_000, 100)));
      const statuses = new Map<number, number>();
      for (const r of during) statuses.set(r.status ?? -1, (statuses.get(r.status ?? -1) ?? 0) + 1);
      return {
        injected: `Redis stopped (SIGTERM) for ${outageMs} ms under load, then started again (empty)`,
        figures: `during the outage ${[...statuses].map(([s, n]) => `${n} × ${s === -1 ? 'open' : s}`).join(', ')}; both proxies served ${Date.now() - startedAtMs} ms after Redis returned`,
      };
    });
  });

  it('stop the admin past the staleness bound: proxies refuse while stale and serve again soon after', async () => {
    await runScenario('stop admin past staleness', 'f6', async (_load, organisation) => {
      const stoppingAtMs = Date.now();
      const adminExitCode = await gateway.kill(gateway.admin, 'SIGTERM');
      const stoppedAtMs = Date.now();
      const refusedAfterMs: number[] = [];
      await Promise.all(gateway.proxyBases.map(async (_, index) => {
        await waitFor(`proxy ${index} refusing while stale`, async () => (await probe(index, organisation, 'f6')) === 503, faultTimings.stalenessMs + 5_000, 100);
        refusedAfterMs[index] = Date.now() - stoppedAtMs;
      }));
      await gateway.startAdmin();
      const readyAtMs = Date.now();
      const servedAfterMs: number[] = [];
      const problems: string[] = [];
      const recoveryBoundMs = 5_000;
      await Promise.all(gateway.proxyBases.map(async (_, index) => {
        try {
          await waitFor(`proxy ${index} serving again`, async () => (await probe(index, organisation, 'f6')) === 200, recoveryBoundMs, 100);
          servedAfterMs[index] = Date.now() - readyAtMs;
        } catch {
          problems.push(`proxy ${index} did not serve within ${recoveryBoundMs} ms of the admin being ready`);
        }
      }));
      return {
        injected: `admin stopped (SIGTERM; exited ${adminExitCode} after ${stoppedAtMs - stoppingAtMs} ms) past PROXY_CONFIG_STALENESS_MS=${faultTimings.stalenessMs}; started again once both proxies refused`,
        figures: `proxies refused (503) ${refusedAfterMs.join(' / ')} ms after the admin exited; served again ${servedAfterMs.map((ms) => ms ?? 'never').join(' / ')} ms after the admin was ready`,
        problems,
      };
    });
  });

  it('refuses Credit from a client without an identity and from the proxy identity; the balance does not move', async () => {
    const organisation = await gateway.createOrganisation('f7', 1_000_000n);
    const before = await gateway.balance(organisation.id);
    const files = gateway.security.pki.files;
    // What each caller must get: no identity is refused before any handler (a failed handshake,
    // UNAVAILABLE, or UNAUTHENTICATED); an identity the CA vouches for reaches the role check
    // and gets PERMISSION_DENIED, which also proves the ledger was reachable over mTLS at all.
    const attempts: Array<{ who: string; identity: ProbeIdentity; refusedWith: number[] }> = [
      { who: 'plaintext client', identity: { kind: 'plaintext' }, refusedWith: [grpcStatus.unavailable, grpcStatus.unauthenticated] },
      { who: 'TLS client without a certificate', identity: { kind: 'tls-without-certificate', caFile: files.proxy.caFile }, refusedWith: [grpcStatus.unavailable, grpcStatus.unauthenticated] },
      { who: 'proxy-named certificate of another CA', identity: { kind: 'certificate', ...files.stranger }, refusedWith: [grpcStatus.unavailable, grpcStatus.unauthenticated] },
      { who: 'proxy identity', identity: { kind: 'certificate', ...files.proxy }, refusedWith: [grpcStatus.permissionDenied] },
    ];
    const problems: string[] = [];
    const outcomes: string[] = [];
    for (const attempt of attempts) {
      const outcome = await probeCredit(gateway.ledgerGrpcAddress, attempt.identity, organisation.id, 1_000_000_000_000n);
      outcomes.push(`${attempt.who}: ${outcome.ok ? 'OK' : `code ${outcome.code}`}`);
      if (outcome.ok) problems.push(`${attempt.who} credited ₹1,000,000 through LedgerService/Credit`);
      else if (!attempt.refusedWith.includes(outcome.code)) problems.push(`${attempt.who} got code ${outcome.code} (${outcome.details}), expected ${attempt.refusedWith.join(' or ')}`);
    }
    const after = await gateway.balance(organisation.id);
    if (after.creditedMicros !== before.creditedMicros || after.availableMicros !== before.availableMicros) {
      problems.push(`the balance moved: credited ${before.creditedMicros} -> ${after.creditedMicros} µ₹`);
    }
    const verify = await runLedgerVerify(postgres.url);
    if (verify.exitCode !== 0) problems.push(`ledger verify exited ${verify.exitCode}`);
    recordFault({
      scenario: 'Credit without a permitted identity',
      injected: `LedgerService/Credit of ₹1,000,000 from ${attempts.map((a) => a.who).join(', ')}`,
      checked: [...outcomes, `credited ${before.creditedMicros} -> ${after.creditedMicros} µ₹`, verify.output.split('\n').at(-1)!, ...problems.map((p) => `FAILED: ${p}`)].join('; '),
      passed: problems.length === 0,
    });
    expect(problems).toEqual([]);
  });
});
