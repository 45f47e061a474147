/**
 * The fault suite's gateway: ledger, admin and proxies as processes over the suite's own
 * PostgreSQL cluster and Redis, on fixed ports chosen once (free ports from the OS), so each
 * service can be killed and started again where the others expect it. Organisations are made
 * through the admin API, one per scenario, so each scenario's money and usage stand alone.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { issueSecret } from '@gateway/secrets';
import { createTestPki, serviceTlsEnv, type TestIdentity, type TestPki } from '@gateway/testkit';
import { startServiceProcess } from '@gateway/testkit/outside-vitest';
import { freePort, startService, waitUntilReady, type ServiceProcess } from '../../support/service-processes.ts';
import { killPidSync, onWorkerExit, removeSync } from './cleanup.ts';
import type { LocalPostgres, LocalRedis } from './local-servers.ts';
import { readAllUsage, readBalance, type ListedUsageRecord, type OrganisationBalance } from '../../support/admin-money-reads.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** Prices of the fault model, µ₹ per million tokens (odd, so every rounding shows). */
export const faultPrices = { inputPriceMicrosPerMtok: 3_000_017n, outputPriceMicrosPerMtok: 7_000_019n } as const;

/** Timing settings the checks depend on, ms. */
export const faultTimings = {
  /** RESERVE_TTL_MS of the proxies: a hold orphaned by a fault expires this long after its Reserve (or last checkpoint). */
  reserveTtlMs: 8_000,
  /** LEDGER_SWEEP_INTERVAL_MS. */
  sweepIntervalMs: 500,
  /** PROXY_CHECKPOINT_INTERVAL_MS: the documented bound of what a SIGKILL of a proxy can lose on a stream. */
  checkpointIntervalMs: 2_000,
  /** PROXY_STREAM_LEASE_MS: a killed proxy's checkpointed stream holds this long after its last checkpoint (the least allowed: 2 intervals + the 5 s call timeout). */
  streamLeaseMs: 9_000,
  /** PROXY_CONFIG_STALENESS_MS. */
  stalenessMs: 3_000,
  /** ADMIN_HEARTBEAT_INTERVAL_MS: well inside the staleness bound. */
  heartbeatIntervalMs: 500,
  /** SHUTDOWN_GRACE_MS of the proxies: shorter than a stream, so a SIGTERM cuts live streams. */
  proxyShutdownGraceMs: 1_500,
  /** SHUTDOWN_GRACE_MS of the admin: its config streams may hold a SIGTERM this long, which only delays the outage. */
  adminShutdownGraceMs: 2_000,
} as const;

/**
 * The services' gRPC security: mTLS with certificates from the testkit's throwaway PKI (service
 * identity), the way a deployment runs them.
 */
export interface GrpcSecurity {
  pki: TestPki;
  /** The GRPC_TLS_* variables of a service (or of an impostor, for the identity checks). */
  env(identity: TestIdentity): Record<string, string>;
  /** Removes the PKI's folder. */
  dispose(): void;
}

async function grpcSecurity(): Promise<GrpcSecurity> {
  const pki = await createTestPki();
  const unregister = onWorkerExit(() => removeSync(pki.dir));
  return { pki, env: (identity) => serviceTlsEnv(pki, identity), dispose: () => { removeSync(pki.dir); unregister(); } };
}

/** One organisation made for a scenario, with a project key to call the proxies with. */
export interface FaultOrganisation {
  id: string;
  apiKey: string;
  creditMicros: bigint;
}

/** A balance as the admin API gives it, µ₹. */
export type FaultBalance = OrganisationBalance;

/** One usage record as the admin API lists it. */
export type FaultUsageRecord = ListedUsageRecord;

/** A running fault gateway. */
export interface FaultGateway {
  upstream: FakeUpstream;
  /** The credential the fake upstream requires (a scenario's own deployments of it need it too). */
  upstreamCredential: string;
  security: GrpcSecurity;
  modelSlug: string;
  ledgerGrpcAddress: string;
  /** Base URLs of the proxies' `/v1`, by index (stable across restarts). */
  proxyBases: string[];
  /** The running process of each service (replaced on restart). */
  ledger: ServiceProcess;
  admin: ServiceProcess;
  proxies: ServiceProcess[];
  /** kill -9 (or SIGTERM) a service and wait for it to exit; resolves with its exit code. */
  kill(service: ServiceProcess, signal: 'SIGKILL' | 'SIGTERM'): Promise<number | null>;
  startLedger(): Promise<void>;
  startAdmin(): Promise<void>;
  startProxy(index: number): Promise<void>;
  /** Calls the admin API as the platform admin; throws on a non-2xx answer. */
  adminCall(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Record<string, any>>;
  /** Makes an organisation (credit, project, key) that every proxy can already serve. */
  createOrganisation(name: string, creditMicros: bigint): Promise<FaultOrganisation>;
  /** Every organisation made so far. */
  organisations: FaultOrganisation[];
  balance(organisationId: string): Promise<FaultBalance>;
  /** Every usage record of the organisation (all pages). */
  usage(organisationId: string): Promise<FaultUsageRecord[]>;
  /** The last output of every service, for a failure message. */
  outputs(): string;
  close(): Promise<void>;
}

/** The last lines of a service's output, warnings and errors first (a failure's likely cause), each cut to 400 characters. */
function lastLines(output: string): string {
  const lines = output.trimEnd().split('\n');
  const loud = lines.filter((line) => !line.startsWith('{"level":30')).slice(-8);
  return [...loud, '…', ...lines.slice(-3)].map((line) => (line.length > 400 ? `${line.slice(0, 400)}…` : line)).join('\n');
}

/** Options of startFaultGateway. */
export interface FaultGatewayOptions {
  postgres: LocalPostgres;
  redis: LocalRedis;
  proxyCount: number;
  /** Extra environment of every proxy (e.g. PROXY_CREDIT_GRANTS=off), after the suite's own. */
  proxyEnv?: Record<string, string>;
}

/** Starts ledger, admin and proxies over the suite's own PostgreSQL and Redis, plus the fake upstream. */
export async function startFaultGateway(options: FaultGatewayOptions): Promise<FaultGateway> {
  const security = await grpcSecurity();
  const adminToken = issueSecret('adminToken').secret;
  const encryptionKey = randomBytes(32).toString('base64');
  const upstreamCredential = `sk-vendor-${randomBytes(8).toString('hex')}`;
  const upstream = await startFakeUpstream({ requiredApiKey: upstreamCredential });
  const [ledgerGrpc, ledgerHttp, adminHttp, adminGrpc, ...proxyPorts] = await Promise.all(Array.from({ length: 4 + options.proxyCount }, freePort)) as number[];
  const common = { LOG_LEVEL: 'info', BIND_HOST: '127.0.0.1', DATABASE_URL: options.postgres.url };
  const ledgerGrpcAddress = `127.0.0.1:${ledgerGrpc}`;
  const running = new Set<ServiceProcess>();
  const unregister = onWorkerExit(() => { for (const service of running) killPidSync(service.child.pid); });
  const ended: string[] = [];
  /** Services the suite itself is stopping (an exit of any other is unexpected). */
  const stopping = new WeakSet<ServiceProcess>();

  const launch = async (name: 'ledger' | 'admin' | 'proxy', env: Record<string, string>, readyUrl: string): Promise<ServiceProcess> => {
    const service = startService(name, env);
    running.add(service);
    service.child.once('exit', (code, signal) => {
      running.delete(service);
      const report = `--- ${name} (pid ${service.child.pid}) exited with ${signal ?? code}:\n${lastLines(service.output())}`;
      ended.push(report);
      // A service that dies on its own is a finding of its own: say so at once, with its last words.
      if (!stopping.has(service)) process.stderr.write(`\n!!! fault suite: ${name} exited by itself\n${report}\n`);
    });
    await waitUntilReady(service, readyUrl, 30_000);
    return service;
  };
  const startLedger = async () => {
    gateway.ledger = await launch('ledger', {
      ...common, ...security.env('ledger'), LEDGER_GRPC_PORT: String(ledgerGrpc), LEDGER_HTTP_PORT: String(ledgerHttp), LEDGER_METRICS_PORT: '0',
      LEDGER_SWEEP_INTERVAL_MS: String(faultTimings.sweepIntervalMs),
    }, `http://127.0.0.1:${ledgerHttp}/readyz`);
  };
  const startAdmin = async () => {
    gateway.admin = await launch('admin', {
      ...common, ...security.env('admin'), ADMIN_HTTP_PORT: String(adminHttp), ADMIN_METRICS_PORT: '0', ADMIN_GRPC_PORT: String(adminGrpc), LEDGER_GRPC_URL: ledgerGrpcAddress,
      ADMIN_ENCRYPTION_KEY: encryptionKey, ADMIN_BOOTSTRAP_TOKEN: adminToken, ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
      ADMIN_HEARTBEAT_INTERVAL_MS: String(faultTimings.heartbeatIntervalMs), SHUTDOWN_GRACE_MS: String(faultTimings.adminShutdownGraceMs),
    }, `http://127.0.0.1:${adminHttp}/readyz`);
  };
  const startProxy = async (index: number) => {
    gateway.proxies[index] = await launch('proxy', {
      LOG_LEVEL: 'info', BIND_HOST: '127.0.0.1', ...security.env('proxy'), PROXY_HTTP_PORT: String(proxyPorts[index]), PROXY_METRICS_PORT: '0', PROXY_ID: `fault-proxy-${index}`,
      ADMIN_GRPC_URL: `127.0.0.1:${adminGrpc}`, LEDGER_GRPC_URL: ledgerGrpcAddress, REDIS_URL: options.redis.url,
      RESERVE_TTL_MS: String(faultTimings.reserveTtlMs), PROXY_CHECKPOINT_INTERVAL_MS: String(faultTimings.checkpointIntervalMs),
      PROXY_STREAM_LEASE_MS: String(faultTimings.streamLeaseMs),
      PROXY_CONFIG_STALENESS_MS: String(faultTimings.stalenessMs), SHUTDOWN_GRACE_MS: String(faultTimings.proxyShutdownGraceMs),
      ...options.proxyEnv,
    }, `http://127.0.0.1:${proxyPorts[index]}/readyz`);
  };

  const adminBase = `http://127.0.0.1:${adminHttp}/admin/v1`;
  const adminCall = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${adminBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    const json = await response.json() as Record<string, any>;
    if (response.status >= 300) throw new Error(`${method} ${path} -> ${response.status}: ${JSON.stringify(json)}`);
    return json;
  };

  const modelSlug = 'fault-chat';
  const gateway: FaultGateway = {
    upstream, upstreamCredential, security, modelSlug, ledgerGrpcAddress,
    proxyBases: proxyPorts.map((port) => `http://127.0.0.1:${port}/v1`),
    ledger: undefined as unknown as ServiceProcess,
    admin: undefined as unknown as ServiceProcess,
    proxies: [],
    organisations: [],
    async kill(service, signal) {
      stopping.add(service);
      if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill(signal);
      return service.stop();
    },
    startLedger, startAdmin, startProxy, adminCall,
    async createOrganisation(name, creditMicros) {
      const organisation = await adminCall('POST', '/organisations', { name, rpm_limit: 100_000, allowed_gateway_models: [modelSlug] });
      const id = organisation.id as string;
      await adminCall('POST', `/organisations/${id}/credits`, { amount_micros: creditMicros.toString(), reason: 'fault suite opening credit' }, { 'idempotency-key': `fault-${id}` });
      // The project call returns once every connected proxy has acknowledged the key's version.
      const project = await adminCall('POST', `/organisations/${id}/projects`, { name: `${name} project` });
      const made = { id, apiKey: project.api_key as string, creditMicros };
      gateway.organisations.push(made);
      return made;
    },
    async balance(organisationId) {
      return readBalance(adminCall, organisationId);
    },
    async usage(organisationId) {
      return readAllUsage(adminCall, organisationId);
    },
    outputs() {
      const live = [...running].map((service) => `--- ${service.name} (pid ${service.child.pid}) running:\n${lastLines(service.output())}`);
      return [...ended.slice(-6), ...live].join('\n');
    },
    async close() {
      // Every process still running, also one that never became ready (so it was never handed
      // out); proxies first, as in production, then admin and ledger.
      const rank = { proxy: 0, admin: 1, ledger: 2 } as Record<string, number>;
      const order = [...running].sort((a, b) => (rank[a.name] ?? 0) - (rank[b.name] ?? 0));
      for (const service of order) {
        stopping.add(service);
        const stopped = service.stop();
        const timer = setTimeout(() => service.child.kill('SIGKILL'), 15_000);
        await stopped;
        clearTimeout(timer);
      }
      await upstream.close();
      security.dispose();
      unregister();
    },
  };

  try {
    await startLedger();
    await startAdmin();
    await Promise.all(proxyPorts.map((_, index) => startProxy(index)));
    await adminCall('POST', '/gateway-models', {
      slug: modelSlug, display_name: 'Fault Chat', default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: faultPrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: faultPrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: upstream.baseUrl, model: 'upstream-fault-model', api_key: upstreamCredential },
    });
  } catch (error) {
    const output = gateway.outputs();
    await gateway.close();
    throw new Error(`${(error as Error).message}\n${output}`, { cause: error });
  }
  return gateway;
}

/** Runs `services/ledger/src/verify-cli.ts` against the database; resolves with its exit code and output. */
export async function runLedgerVerify(databaseUrl: string): Promise<{ exitCode: number | null; output: string }> {
  const verify = startServiceProcess('verify', 'services/ledger/src/verify-cli.ts', { DATABASE_URL: databaseUrl }, repoRoot);
  const unregister = onWorkerExit(() => killPidSync(verify.child.pid));
  const timer = setTimeout(() => verify.child.kill('SIGKILL'), 60_000);
  // 'close' comes after the output streams have ended, so the output is whole.
  const exitCode = await new Promise<number | null>((resolve) => verify.child.once('close', (code) => resolve(code)));
  clearTimeout(timer);
  unregister();
  return { exitCode, output: verify.output().trim() };
}
