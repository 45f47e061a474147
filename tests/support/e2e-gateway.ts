/**
 * A whole gateway for end-to-end tests: ledger, admin and any number of proxies as
 * processes over a fresh PostgreSQL database, plus a fake upstream, with one organisation set up
 * through the admin API (model, organisation, credit, project and key). Reuses
 * service-processes.ts; every process is stopped by `close()`.
 */
import { randomBytes } from 'node:crypto';
import OpenAI from 'openai';
import { startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { issueSecret } from '@gateway/secrets';
import { createTestDatabase, serviceTlsEnv, sharedTestPki, type TestDatabase } from '@gateway/testkit';
import { freePort, startService, waitUntilReady, type ServiceProcess } from './service-processes.ts';

/** Prices of the e2e model, µ₹ per million tokens (odd, so every rounding shows). */
export const e2ePrices = { inputPriceMicrosPerMtok: 2_000_003n, outputPriceMicrosPerMtok: 5_000_007n } as const;

/** ceil(tokens × price / 1e6), written out independently of the code under test. */
export function e2eCostMicros(promptTokens: number, completionTokens: number): bigint {
  const side = (tokens: number, price: bigint) => (BigInt(tokens) * price + 999_999n) / 1_000_000n;
  return side(promptTokens, e2ePrices.inputPriceMicrosPerMtok) + side(completionTokens, e2ePrices.outputPriceMicrosPerMtok);
}

/** The `usage` a response shows for some tokens at the e2e prices: the counts and their cost in µ₹ and rupees. */
export function e2eUsage(promptTokens: number, completionTokens: number, reasoningTokens = 0): {
  prompt_tokens: number; completion_tokens: number; total_tokens: number; completion_tokens_details: { reasoning_tokens: number }; cost_micros: string; cost_inr: string;
} {
  const costMicros = e2eCostMicros(promptTokens, completionTokens);
  return {
    prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens,
    completion_tokens_details: { reasoning_tokens: reasoningTokens },
    cost_micros: String(costMicros), cost_inr: `${costMicros / 1_000_000n}.${String(costMicros % 1_000_000n).padStart(6, '0')}`,
  };
}

/** Options of startE2eGateway. */
export interface E2eGatewayOptions {
  serverUrl: string;
  /** How many proxy processes to start; default 1. */
  proxies?: number;
  /** Extra environment of every proxy (e.g. REDIS_URL and PROXY_REDIS_PREFIX). */
  proxyEnv?: Record<string, string>;
  /** The organisation's RPM limit; default 600. */
  rpmLimit?: number;
  /** The organisation's opening credit, µ₹; default ₹10. */
  creditMicros?: bigint;
  /** LOG_LEVEL of every service; default `info` (tests read the logs for secrets). */
  logLevel?: string;
  /** Extra environment of the admin (e.g. LIVE_POLL_MS for the dashboard's browser tests). */
  adminEnv?: Record<string, string>;
  /** Extra environment of the ledger (e.g. OTEL_EXPORTER_OTLP_ENDPOINT for the tracing test). */
  ledgerEnv?: Record<string, string>;
}

/** An admin API answer: status, headers and the parsed body. */
export interface AdminAnswer {
  status: number;
  headers: Headers;
  json: Record<string, any>;
}

/** A running gateway with one organisation ready to call. */
export interface E2eGateway {
  upstream: FakeUpstream;
  services: ServiceProcess[];
  /** Base URLs of the proxies' `/v1`. */
  proxyBases: string[];
  /** Base URL of the admin's `/admin/v1`. */
  adminBase: string;
  /** The services' PostgreSQL database (each service in its own schema), for tests that read rows. */
  databaseUrl: string;
  organisationId: string;
  apiKey: string;
  /** The gateway model slug the organisation may use. */
  modelSlug: string;
  /** The platform-admin token the admin was started with. */
  adminToken: string;
  /** The credential the fake upstream requires; the gateway model carries it. */
  upstreamCredential: string;
  /** Calls the admin API; throws on a non-2xx answer. */
  admin(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Record<string, any>>;
  /** Calls the admin API and returns the whole answer, whatever its status. */
  adminRequest(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<AdminAnswer>;
  /**
   * The organisation's balance (the admin's JSON) once it holds nothing: Settles run right after
   * their responses, so a read at once may still show the hold. Gives up after 15 s and returns
   * what it last read, for the assertion to show.
   */
  settledBalance(organisationId?: string): Promise<Record<string, any>>;
  /** An official client of proxy `index`, retries off. */
  client(index?: number, apiKey?: string): OpenAI;
  /** Stops proxies first, then admin and ledger; resolves with the exit codes. */
  close(): Promise<Array<number | null>>;
}

/** Starts ledger, admin and proxies, and sets up one organisation through the admin API. */
export async function startE2eGateway(options: E2eGatewayOptions): Promise<E2eGateway> {
  const adminToken = issueSecret('adminToken').secret;
  const upstreamCredential = `sk-vendor-${randomBytes(8).toString('hex')}`;
  const database: TestDatabase = await createTestDatabase(options.serverUrl);
  const upstream = await startFakeUpstream({ requiredApiKey: upstreamCredential });
  const proxyCount = options.proxies ?? 1;
  // Every port, the metrics ports included, comes from one batch: a metrics port left to the OS
  // (port 0) could be one already handed to a proxy that has not bound it yet (EADDRINUSE).
  const ports = await Promise.all(Array.from({ length: 6 + 2 * proxyCount }, freePort));
  const [ledgerGrpc, ledgerHttp, adminHttp, adminGrpc, ledgerMetrics, adminMetrics] = ports as [number, number, number, number, number, number];
  const proxyPorts = ports.slice(6, 6 + proxyCount);
  const proxyMetricsPorts = ports.slice(6 + proxyCount);
  const logLevel = options.logLevel ?? 'info';
  const common = { DATABASE_URL: database.url, LOG_LEVEL: logLevel, BIND_HOST: '127.0.0.1' };
  // Each service process gets its own certificate of the test PKI: internal gRPC is mTLS, as in production.
  const pki = await sharedTestPki();
  const services: ServiceProcess[] = [];
  let closed: Promise<Array<number | null>> | undefined;

  const close = () => {
    closed ??= (async () => {
      const codes: Array<number | null> = [];
      // Proxies first, as in production: their reservations resolve while the ledger still runs.
      for (const service of [...services].reverse()) codes.push(await service.stop());
      await upstream.close();
      await database.drop();
      return codes;
    })();
    return closed;
  };

  try {
    const ledger = startService('ledger', { ...common, ...serviceTlsEnv(pki, 'ledger'), LEDGER_GRPC_PORT: String(ledgerGrpc), LEDGER_HTTP_PORT: String(ledgerHttp), LEDGER_METRICS_PORT: String(ledgerMetrics), ...options.ledgerEnv });
    services.push(ledger);
    await waitUntilReady(ledger, `http://127.0.0.1:${ledgerHttp}/readyz`);
    const adminService = startService('admin', {
      ...common, ...serviceTlsEnv(pki, 'admin'),
      ADMIN_HTTP_PORT: String(adminHttp), ADMIN_METRICS_PORT: String(adminMetrics), ADMIN_GRPC_PORT: String(adminGrpc), LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`,
      ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ADMIN_BOOTSTRAP_TOKEN: adminToken, ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
      ...options.adminEnv,
    });
    services.push(adminService);
    await waitUntilReady(adminService, `http://127.0.0.1:${adminHttp}/readyz`);
    const proxies = proxyPorts.map((port, index) => startService('proxy', {
      ...serviceTlsEnv(pki, 'proxy'),
      LOG_LEVEL: logLevel, BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(port), PROXY_METRICS_PORT: String(proxyMetricsPorts[index]), PROXY_ID: `e2e-proxy-${index}`,
      ADMIN_GRPC_URL: `127.0.0.1:${adminGrpc}`, LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`, ...options.proxyEnv,
    }));
    services.push(...proxies);
    // Every proxy holds a snapshot before the key is made, so the key's version reaches them all.
    await Promise.all(proxies.map((proxy, index) => waitUntilReady(proxy, `http://127.0.0.1:${proxyPorts[index]}/readyz`)));

    const adminBase = `http://127.0.0.1:${adminHttp}/admin/v1`;
    const adminRequest = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<AdminAnswer> => {
      const response = await fetch(`${adminBase}${path}`, {
        method,
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, headers: response.headers, json: await response.json() as Record<string, any> };
    };
    const admin = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const answer = await adminRequest(method, path, body, headers);
      if (answer.status >= 300) throw new Error(`${method} ${path} -> ${answer.status}: ${JSON.stringify(answer.json)}`);
      return answer.json;
    };

    const modelSlug = 'e2e-chat';
    await admin('POST', '/gateway-models', {
      slug: modelSlug, display_name: 'E2E Chat', default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: upstream.baseUrl, model: 'upstream-secret-model', api_key: upstreamCredential },
    });
    const organisation = await admin('POST', '/organisations', { name: 'E2E', rpm_limit: options.rpmLimit ?? 600, allowed_gateway_models: [modelSlug] });
    const organisationId = organisation.id as string;
    await admin('POST', `/organisations/${organisationId}/credits`, {
      amount_micros: (options.creditMicros ?? 10_000_000n).toString(), reason: 'e2e opening credit',
    }, { 'idempotency-key': 'e2e-opening-credit' });
    const project = await admin('POST', `/organisations/${organisationId}/projects`, { name: 'e2e' });
    const apiKey = project.api_key as string;
    const proxyBases = proxyPorts.map((port) => `http://127.0.0.1:${port}/v1`);

    return {
      upstream, services, proxyBases, adminBase, databaseUrl: database.url, organisationId, apiKey, modelSlug, adminToken, upstreamCredential, admin, adminRequest,
      async settledBalance(id = organisationId) {
        const deadline = Date.now() + 15_000;
        for (;;) {
          const balance = await admin('GET', `/organisations/${id}/balance`);
          if (balance.held_micros === '0' || Date.now() > deadline) return balance;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      },
      client: (index = 0, key = apiKey) => new OpenAI({ apiKey: key, baseURL: proxyBases[index]!, maxRetries: 0 }),
      close,
    };
  } catch (error) {
    const output = services.map((s) => `--- ${s.name}\n${s.output()}`).join('\n');
    await close();
    throw new Error(`${(error as Error).message}\n${output}`, { cause: error });
  }
}
