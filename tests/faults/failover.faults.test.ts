/**
 * A proxy stopped between the attempts of one request (issue 29; docs/proxy.md "Routing"): a slug
 * whose first deployment answers 503 at once and whose second is the fake upstream, holding the
 * request ([[fake:delay_ms]]). The first attempt fails over, the second is in flight at the
 * upstream, and then the proxy is killed (SIGKILL) or stopped (SIGTERM). One Reserve covers both
 * attempts, so the request has exactly one outcome whatever the stop: after a SIGKILL nothing was
 * delivered and nothing is charged (a durable Reserve expires once; a carved one returns with its
 * grant), after a SIGTERM
 * the drain lets the second attempt finish and it is billed once, from the upstream's usage. Then
 * the suite's common checks (support/money-checks.ts): nothing held past its deadline, Verify
 * clean, CONSERVATION for every organisation, no request with two usage records.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordFault } from './support/fault-table.ts';
import { faultPrices, startFaultGateway, type FaultGateway, type FaultOrganisation } from './support/fault-gateway.ts';
import { waitFor } from './support/fault-load.ts';
import { findLocalBinaries, startLocalPostgres, startLocalRedis, type LocalPostgres, type LocalRedis } from './support/local-servers.ts';
import { checkAfterFault, monitorBalance } from './support/money-checks.ts';

const binaries = findLocalBinaries();
const missing = binaries.problems.length > 0;
const slug = 'failover-chat';

let postgres: LocalPostgres;
let redis: LocalRedis;
let gateway: FaultGateway;
let refuser: Server;
let refused = 0;

/** A chat completion to proxy 0 whose second attempt the fake upstream holds `delayMs`; resolves with the status (0: the connection broke). */
async function send(organisation: FaultOrganisation, requestId: string, delayMs: number): Promise<number> {
  try {
    const response = await fetch(`${gateway.proxyBases[0]}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${organisation.apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify({ model: slug, max_tokens: 16, messages: [{ role: 'user', content: `failover [[fake:reply_words=4]] [[fake:delay_ms=${delayMs}]] [[fake:tag=${requestId}]]` }] }),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/** Waits until the second attempt of `requestId` is at the fake upstream, after the first was refused. */
async function secondAttemptInFlight(requestId: string, refusedBefore: number): Promise<void> {
  await waitFor(`the second attempt of ${requestId} at the upstream`, () => refused > refusedBefore && gateway.upstream.requests.some((r) => r.tag === requestId), 15_000, 10);
}

// With credit grants (the default: the Reserve is carved in memory, and a killed request's money
// comes back with its grant) and without (PROXY_CREDIT_GRANTS=off: a durable Reserve at the ledger,
// which the sweeper expires once).
describe.skipIf(missing && process.env.CI !== 'true').each(['on', 'off'] as const)('a proxy stopped between the attempts of a request, credit grants %s: exactly one outcome', (grants) => {
  beforeAll(async () => {
    if (missing) throw new Error(`CI=true and the fault suite's binaries are missing: ${binaries.problems.join('; ')}`);
    refuser = createServer((request, response) => {
      refused += 1;
      request.resume();
      request.on('end', () => response.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded"}}'));
    });
    await new Promise<void>((resolve) => refuser.listen(0, '127.0.0.1', resolve));
    postgres = await startLocalPostgres(binaries);
    redis = await startLocalRedis(binaries);
    gateway = await startFaultGateway({ postgres, redis, proxyCount: 1, proxyEnv: { PROXY_CREDIT_GRANTS: grants } });
    await gateway.adminCall('POST', '/gateway-models', {
      slug, display_name: 'Failover Chat', default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: faultPrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: faultPrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: `http://127.0.0.1:${(refuser.address() as AddressInfo).port}/v1`, model: 'refusing', allow_private_network: true },
    });
    await gateway.adminCall('POST', '/upstream-deployments', {
      gateway_model: slug, name: 'second', priority: 1,
      upstream: { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'upstream-fault-model', api_key: gateway.upstreamCredential, allow_private_network: true },
    });
  });

  afterAll(async () => {
    await gateway?.close();
    await redis?.destroy();
    await postgres?.destroy();
    refuser?.closeAllConnections();
    refuser?.close();
  });

  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    it(`${signal} while the second attempt is at the upstream`, async () => {
      const prefix = `failover-${grants}-${signal.toLowerCase()}`;
      const organisation = await gateway.createOrganisation(prefix, 2_000_000n);
      await gateway.adminCall('PATCH', `/organisations/${organisation.id}`, { allowed_gateway_models: [gateway.modelSlug, slug] });
      const monitor = monitorBalance(gateway, organisation.id);
      const problems: string[] = [];
      let figures = '';
      const requestId = `${prefix}-1`;
      // SIGKILL: the upstream holds the answer well past the kill. SIGTERM: it answers inside the drain (SHUTDOWN_GRACE_MS 1.5 s).
      const answer = send(organisation, requestId, signal === 'SIGKILL' ? 20_000 : 600);
      await secondAttemptInFlight(requestId, refused);
      const exitCode = await gateway.kill(gateway.proxies[0]!, signal);
      const status = await answer;
      await gateway.startProxy(0);
      const report = await checkAfterFault({
        gateway, postgres, organisationId: organisation.id, requestIdPrefix: prefix, monitor,
        // A killed request delivered nothing and may leave no record; never two.
        exempt: signal === 'SIGKILL' ? new Set([requestId]) : undefined,
      });
      problems.push(...report.problems);
      const records = report.usage.recordsById.get(requestId) ?? [];
      const balance = await gateway.balance(organisation.id);
      if (signal === 'SIGKILL') {
        // Its connection broke with the process: it was still open, its second attempt in flight.
        if (status !== 0) problems.push(`the killed request was answered ${status}`);
        if (records.length !== 0) problems.push(`the killed request has ${records.length} usage record(s); nothing was delivered`);
        if (balance.debitedMicros !== 0n) problems.push(`${balance.debitedMicros} µ₹ debited for a request that delivered nothing`);
      } else {
        if (status !== 200) problems.push(`the drained request was answered ${status}, not 200`);
        if (records.length !== 1) problems.push(`the drained request has ${records.length} usage records, not 1`);
        else if (BigInt(records[0]!.costMicros) !== balance.debitedMicros) problems.push(`debited ${balance.debitedMicros} µ₹, its record cost ${records[0]!.costMicros} µ₹`);
      }
      if (balance.heldMicros !== 0n) problems.push(`${balance.heldMicros} µ₹ still held`);
      // ONE_OUTCOME at the ledger: a durable Reserve (grants off) expired (SIGKILL) or settled
      // (SIGTERM) once; a carve (grants on) never has a reservation: its Settle writes only its
      // usage record (migration 0021), checked above.
      const outcomes = await postgres.query(`SELECT coalesce(string_agg(status, ',' ORDER BY status), '') FROM ledger.reservations WHERE organisation_id = '${organisation.id}'`);
      const expected = grants === 'on' ? '' : signal === 'SIGTERM' ? 'settled' : 'expired';
      if (outcomes !== expected) problems.push(`the organisation's reservations are "${outcomes}", expected "${expected}"`);
      figures = `first attempt 503, second at the upstream; ${signal} (exit ${exitCode}); client ${status}; reservations [${outcomes}]; ${records.length} usage record(s); ` +
        `debited ${balance.debitedMicros} µ₹, held ${balance.heldMicros}; ${report.figures}`;
      recordFault({
        scenario: `${signal} a proxy between the attempts of a request (credit grants ${grants})`,
        injected: `${signal} of proxy 0 while its request's second deployment held the answer (the first had answered 503)`,
        checked: [figures, ...problems.map((p) => `FAILED: ${p}`)].join('; '),
        passed: problems.length === 0,
      });
      expect(problems, gateway.outputs()).toEqual([]);
    });
  }
});
