/**
 * The credit-grant system tests' gateway: one ledger, one admin and N proxy PROCESSES over a
 * fresh PostgreSQL database and a Redis prefix of their own, plus the fake upstream (in the test
 * process, so its `requests` log counts and tags every request that reached it). Organisations
 * are made through the admin API, one per test, so each test's money stands alone.
 *
 * The model is priced so that a request's cost equals its Reserve exactly (`exactRequest`):
 * input 1 µ₹ per million tokens, so the prompt side is ceil(tokens × 1 / 1e6) = 1 µ₹ whatever
 * the count (the proxy's BPE estimate and the fake's word count differ, their price does not),
 * and output 2 µ₹ per token with the reply exactly max_tokens words long. Reserve =
 * 1 + 2 × max_tokens = the cost of the usage the upstream reports.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { issueSecret } from '@gateway/secrets';
import { createTestDatabase, sharedTestPki, serviceTlsEnv, startServiceProcess, uniqueRedisPrefix, type TestDatabase } from '@gateway/testkit';
import { freePort, startService, waitUntilReady, type ServiceProcess } from './service-processes.ts';
import { readAllUsage, readBalance, type ListedUsageRecord, type OrganisationBalance } from './admin-money-reads.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Prices of the grant tests' model, µ₹ per million tokens: the prompt side always costs 1 µ₹, each output token 2 µ₹. */
export const grantPrices = { inputPriceMicrosPerMtok: 1n, outputPriceMicrosPerMtok: 2_000_000n } as const;

/** Words of the reply (= max_tokens) of an exact request. */
export const exactReplyWords = 8;

/** What an exact request reserves and costs, µ₹: 1 (any prompt) + 2 × 8 = 17, written out independently of the proxy's pricing code. */
export const exactRequestMicros = 1n + 2n * BigInt(exactReplyWords);

/** Whether the proxies run with credit grants: `PROXY_CREDIT_GRANTS` of the test run (default on, as in production). */
export const creditGrantsMode: 'on' | 'off' = process.env.PROXY_CREDIT_GRANTS === 'off' ? 'off' : 'on';

/** Options of startGrantGateway. */
export interface GrantGatewayOptions {
  serverUrl: string;
  redisUrl: string;
  /** How many proxy processes. */
  proxies: number;
  /** Extra environment of every proxy (grant timings). */
  proxyEnv?: Record<string, string>;
  /** Extra environment of the ledger (sweep interval). */
  ledgerEnv?: Record<string, string>;
}

/** A balance as the admin API gives it, µ₹. */
export type GrantBalance = OrganisationBalance;

/** One usage record as the admin API lists it. */
export type GrantUsageRecord = ListedUsageRecord;

/** An organisation made for one test, with a project key. */
export interface GrantOrganisation {
  id: string;
  /** The project the key belongs to. */
  projectId: string;
  apiKey: string;
}

/** A project's budget and spend this month as the admin API gives them, µ₹. */
export interface GrantProjectSpend {
  monthlyCapMicros: bigint | null;
  settledMicros: bigint;
  heldMicros: bigint;
}

/** How one chat request ended, as the client saw it. */
export interface ChatOutcome {
  requestId: string;
  proxyIndex: number;
  /** HTTP status; 0 for a transport error (refused connection, reset). */
  status: number;
  /** The OpenAI-shaped error code of a refusal, when the body had one. */
  errorCode?: string;
}

/** A running gateway for the grant tests. */
export interface GrantGateway {
  upstream: FakeUpstream;
  ledger: ServiceProcess;
  admin: ServiceProcess;
  proxies: ServiceProcess[];
  /** Base URLs of the proxies' `/v1`. */
  proxyBases: string[];
  modelSlug: string;
  /** Makes an organisation (RPM far above any test's load) with one project and key, credited `creditMicros`. */
  createOrganisation(name: string, creditMicros: bigint): Promise<GrantOrganisation>;
  balance(organisationId: string): Promise<GrantBalance>;
  /** Sets the project's monthly cap through the admin API (PUT /projects/{id}/budget); resolves when the PUT has answered. */
  setProjectBudget(projectId: string, monthlyCapMicros: bigint): Promise<GrantProjectSpend>;
  /** The project's budget and spend this month (GET /projects/{id}/budget). */
  projectSpend(projectId: string): Promise<GrantProjectSpend>;
  /** Every usage record of the organisation (all pages). */
  usage(organisationId: string): Promise<GrantUsageRecord[]>;
  /**
   * Sends one non-streaming exact request (cost = Reserve = exactRequestMicros) through a proxy,
   * tagged with its request id so the fake upstream's log says whether it reached the upstream.
   */
  exactChat(proxyIndex: number, apiKey: string, requestId: string): Promise<ChatOutcome>;
  /**
   * Request ids of the organisation's streams whose carve the ledger holds as its own, checkpointed
   * reservation (promoted: EXPIRY will charge its checkpoint), read from the ledger's database.
   */
  promotedStreams(organisationId: string): Promise<string[]>;
  /** SIGKILLs proxy `index` (no drain, nothing flushed) and resolves once it has exited. */
  kill(index: number): Promise<void>;
  /** Runs the ledger's Verify over the database (the CLI, as an operator would): exit code and its summary line. */
  verify(): Promise<{ exitCode: number | null; line: string }>;
  /** The last lines of every service's output, for a failure message. */
  outputs(): string;
  /** Stops every process (proxies first) and drops the database. */
  close(): Promise<void>;
}

/** A project budget body of the admin API as µ₹ amounts. */
function projectSpendOf(json: Record<string, any>): GrantProjectSpend {
  return {
    monthlyCapMicros: json.monthly_cap_micros === null ? null : BigInt(json.monthly_cap_micros as string),
    settledMicros: BigInt(json.settled_micros as string), heldMicros: BigInt(json.held_micros as string),
  };
}

/** The fake upstream's request tags that start with a prefix (the requests that reached it). */
export function reachedTags(upstream: FakeUpstream, prefix: string): string[] {
  return upstream.requests.map((r) => r.tag).filter((tag): tag is string => tag !== undefined && tag.startsWith(prefix));
}

/** The last lines of a service's output, warnings and errors first, each cut to 400 characters. */
function lastLines(output: string): string {
  const lines = output.trimEnd().split('\n');
  const loud = lines.filter((line) => !line.startsWith('{"level":30')).slice(-10);
  return [...loud, '…', ...lines.slice(-3)].map((line) => (line.length > 400 ? `${line.slice(0, 400)}…` : line)).join('\n');
}

/** Starts ledger, admin and proxies with the grant settings, and the fake upstream; makes the exact-priced model. */
export async function startGrantGateway(options: GrantGatewayOptions): Promise<GrantGateway> {
  const adminToken = issueSecret('adminToken').secret;
  const upstreamCredential = `sk-vendor-${randomBytes(8).toString('hex')}`;
  const database: TestDatabase = await createTestDatabase(options.serverUrl);
  const upstream = await startFakeUpstream({ requiredApiKey: upstreamCredential });
  const ports = await Promise.all(Array.from({ length: 4 + options.proxies }, freePort));
  const [ledgerGrpc, ledgerHttp, adminHttp, adminGrpc] = ports as [number, number, number, number];
  const proxyPorts = ports.slice(4);
  const common = { DATABASE_URL: database.url, LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1' };
  const pki = await sharedTestPki();
  const services: ServiceProcess[] = [];
  const redisPrefix = uniqueRedisPrefix('grants-e2e');
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      for (const service of [...services].reverse()) await service.stop();
      await upstream.close();
      await database.drop();
    })();
    return closed;
  };
  const outputs = () => services.map((s) => `--- ${s.name} (pid ${s.child.pid})\n${lastLines(s.output())}`).join('\n');

  try {
    const ledger = startService('ledger', {
      ...common, ...serviceTlsEnv(pki, 'ledger'), LEDGER_GRPC_PORT: String(ledgerGrpc), LEDGER_HTTP_PORT: String(ledgerHttp), LEDGER_METRICS_PORT: '0', ...options.ledgerEnv,
    });
    services.push(ledger);
    await waitUntilReady(ledger, `http://127.0.0.1:${ledgerHttp}/readyz`, 60_000);
    const admin = startService('admin', {
      ...common, ...serviceTlsEnv(pki, 'admin'),
      ADMIN_HTTP_PORT: String(adminHttp), ADMIN_METRICS_PORT: '0', ADMIN_GRPC_PORT: String(adminGrpc), LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`,
      ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ADMIN_BOOTSTRAP_TOKEN: adminToken, ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
    });
    services.push(admin);
    await waitUntilReady(admin, `http://127.0.0.1:${adminHttp}/readyz`, 60_000);
    const proxies = proxyPorts.map((port, index) => startService('proxy', {
      ...serviceTlsEnv(pki, 'proxy'),
      LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(port), PROXY_METRICS_PORT: '0', PROXY_ID: `grants-e2e-proxy-${index}`,
      ADMIN_GRPC_URL: `127.0.0.1:${adminGrpc}`, LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`,
      REDIS_URL: options.redisUrl, PROXY_REDIS_PREFIX: redisPrefix, PROXY_CREDIT_GRANTS: creditGrantsMode,
      ...options.proxyEnv,
    }));
    services.push(...proxies);
    // Several proxies start at once (each compiles the same sources): on a busy machine that takes longer than one service alone.
    await Promise.all(proxies.map((proxy, index) => waitUntilReady(proxy, `http://127.0.0.1:${proxyPorts[index]}/readyz`, 60_000)));

    const adminCall = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const response = await fetch(`http://127.0.0.1:${adminHttp}/admin/v1${path}`, {
        method, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = await response.json() as Record<string, any>;
      if (response.status >= 300) throw new Error(`${method} ${path} -> ${response.status}: ${JSON.stringify(json)}`);
      return json;
    };
    const modelSlug = 'grants-chat';
    await adminCall('POST', '/gateway-models', {
      slug: modelSlug, display_name: 'Grants Chat', default_max_tokens: exactReplyWords, max_context_tokens: 4096,
      input_price_micros_per_mtok: grantPrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: grantPrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: upstream.baseUrl, model: 'upstream-grants-model', api_key: upstreamCredential },
    });
    const proxyBases = proxyPorts.map((port) => `http://127.0.0.1:${port}/v1`);

    return {
      upstream, ledger, admin, proxies, proxyBases, modelSlug, outputs, close,
      async createOrganisation(name, creditMicros) {
        const organisation = await adminCall('POST', '/organisations', { name, rpm_limit: 1_000_000, allowed_gateway_models: [modelSlug] });
        const id = organisation.id as string;
        await adminCall('POST', `/organisations/${id}/credits`, { amount_micros: creditMicros.toString(), reason: `${name} opening credit` }, { 'idempotency-key': `${name}-opening` });
        const project = await adminCall('POST', `/organisations/${id}/projects`, { name });
        return { id, projectId: (project.project as { id: string }).id, apiKey: project.api_key as string };
      },
      async balance(organisationId) {
        return readBalance(adminCall, organisationId);
      },
      async setProjectBudget(projectId, monthlyCapMicros) {
        return projectSpendOf(await adminCall('PUT', `/projects/${projectId}/budget`, { monthly_cap_micros: monthlyCapMicros.toString() }));
      },
      async projectSpend(projectId) {
        return projectSpendOf(await adminCall('GET', `/projects/${projectId}/budget`));
      },
      async usage(organisationId) {
        return readAllUsage(adminCall, organisationId);
      },
      async exactChat(proxyIndex, apiKey, requestId) {
        const body = {
          model: modelSlug, max_tokens: exactReplyWords,
          messages: [{ role: 'user', content: `exact [[fake:reply_words=${exactReplyWords}]] [[fake:tag=${requestId}]]` }],
        };
        try {
          const response = await fetch(`${proxyBases[proxyIndex]}/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(30_000),
          });
          const json = await response.json() as { error?: { code?: string } };
          return { requestId, proxyIndex, status: response.status, ...(json.error?.code === undefined ? {} : { errorCode: json.error.code }) };
        } catch {
          return { requestId, proxyIndex, status: 0 };
        }
      },
      async promotedStreams(organisationId) {
        const rows = await database.query<{ request_id: string }>(
          `SELECT request_id FROM ledger.reservations
           WHERE organisation_id = $1 AND grant_id IS NOT NULL AND status = 'held' AND checkpoint_sequence > 0`, [organisationId]);
        return rows.map((row) => row.request_id);
      },
      async kill(index) {
        const { child } = proxies[index]!;
        const exited = new Promise<void>((resolve) => { if (child.exitCode !== null || child.signalCode !== null) resolve(); else child.once('exit', () => resolve()); });
        child.kill('SIGKILL');
        await exited;
      },
      async verify() {
        const run = startServiceProcess('verify', 'services/ledger/src/verify-cli.ts', { DATABASE_URL: database.url }, repoRoot);
        // 'close' comes after the output streams have ended, so the output is whole.
        const exitCode = await new Promise<number | null>((resolve) => run.child.once('close', (code) => resolve(code)));
        const output = run.output().trim();
        return { exitCode, line: output.split('\n').filter((l) => l.startsWith('verify:')).at(-1) ?? output.slice(-500) };
      },
    };
  } catch (error) {
    const output = outputs();
    await close();
    throw new Error(`${(error as Error).message}\n${output}`, { cause: error });
  }
}
