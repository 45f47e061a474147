import { Writable } from 'node:stream';
import OpenAI from 'openai';
import { configV1, type ledgerV1 } from '@gateway/contracts';
import { startFakeUpstream, type FakeUpstream, type PrefixCacheOptions } from '@gateway/fake-upstream';
import { createLogger } from '@gateway/logger';
import { issueSecret } from '@gateway/secrets';
import { tracingOff } from '@gateway/telemetry';
import { serviceTlsEnv, sharedTestPki } from '@gateway/testkit';
import { createProxyApp, type ProxyApp } from '../app.ts';
import { loadProxyConfig } from '../config.ts';
import { startConfigPeer, type ConfigPeer, type ConfigState } from './config-peer.ts';
import { startLedgerPeer, type LedgerPeer } from './ledger-peer.ts';

/** Prices of the test model, µ₹ per million tokens: odd on purpose, so every ceil shows. */
export const testPrices = {
  inputPriceMicrosPerMtok: 2_500_001n,
  outputPriceMicrosPerMtok: 7_000_003n,
  providerInputCostMicrosPerMtok: 1_000_001n,
  providerOutputCostMicrosPerMtok: 3_000_007n,
} as const;

/** ceil(tokens × price / 1e6), written out independently of the code under test. */
export function expectedCostMicros(tokens: number, priceMicrosPerMtok: bigint): bigint {
  const product = BigInt(tokens) * priceMicrosPerMtok;
  return product / 1_000_000n + (product % 1_000_000n === 0n ? 0n : 1n);
}

/**
 * The `usage` a response shows for some tokens at the test prices: the counts and their cost in
 * µ₹ and rupees, written out independently of the code under test.
 */
export function expectedUsage(promptTokens: number, completionTokens: number, reasoningTokens = 0): {
  prompt_tokens: number; completion_tokens: number; total_tokens: number; completion_tokens_details: { reasoning_tokens: number }; cost_micros: string; cost_inr: string;
} {
  const costMicros = expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok);
  const rupees = `${costMicros / 1_000_000n}.${String(costMicros % 1_000_000n).padStart(6, '0')}`;
  return {
    prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens,
    completion_tokens_details: { reasoning_tokens: reasoningTokens }, cost_micros: String(costMicros), cost_inr: rupees,
  };
}

/**
 * A gateway model routed to an upstream. Allowed a private network by default, because the
 * fake upstreams of tests listen on loopback; SSRF tests pass `allowPrivateNetwork: false`.
 */
export function gatewayModel(slug: string, baseUrl: string, overrides: Partial<configV1.GatewayModel> = {}): configV1.GatewayModel {
  return configV1.GatewayModel.fromPartial({
    slug, displayName: slug, defaultMaxTokens: 64, maxContextTokens: 4096, ...testPrices, createdAtS: 1_700_000_000n,
    allowPrivateNetwork: true,
    upstream: { providerKind: 'openai_compatible', baseUrl, model: `${slug}-upstream-name`, apiKey: 'sk-upstream-credential-123' },
    ...overrides,
  });
}

/**
 * One upstream deployment of a gateway model (GatewayModel.deployments), as the admin sends it: an
 * OpenAI-compatible upstream at `baseUrl` with the test credential, allowed a private network
 * (fake upstreams listen on loopback), priority 0 and weight 1 unless overridden. The admin sends
 * the model's own upstream first, as `primary`.
 */
export function gatewayDeployment(name: string, baseUrl: string, overrides: Partial<configV1.UpstreamDeployment> = {}): configV1.UpstreamDeployment {
  return configV1.UpstreamDeployment.fromPartial({
    name, priority: 0, weight: 1, allowPrivateNetwork: true,
    upstream: { providerKind: 'openai_compatible', baseUrl, model: `${name}-upstream-name`, apiKey: 'sk-upstream-credential-123' },
    providerInputCostMicrosPerMtok: testPrices.providerInputCostMicrosPerMtok, providerOutputCostMicrosPerMtok: testPrices.providerOutputCostMicrosPerMtok,
    ...overrides,
  });
}

/** An organisation with its project and key, as the admin would push them. */
export interface TestTenant {
  organisation: configV1.Organisation;
  project: configV1.Project;
  key: configV1.ApiKey;
  /** The API key secret, for clients. */
  apiKey: string;
}

/** Makes an organisation (active, commercial unless overridden) with one project and key. */
export function tenant(id: string, overrides: Partial<configV1.Organisation> = {}): TestTenant {
  const issued = issueSecret('apiKey');
  return {
    organisation: configV1.Organisation.fromPartial({
      id, status: configV1.OrganisationStatus.ORGANISATION_STATUS_ACTIVE, billingMode: configV1.BillingMode.BILLING_MODE_COMMERCIAL,
      rpmLimit: 1000, allowedGatewayModelSlugs: ['chat'], ...overrides,
    }),
    project: { id: `${id}-project`, organisationId: id, disabled: false },
    key: { keyHash: issued.hash, keyId: `${id}-key`, projectId: `${id}-project` },
    apiKey: issued.secret,
  };
}

/** The configuration state holding some tenants and models. */
export function stateOf(tenants: readonly TestTenant[], models: readonly configV1.GatewayModel[]): ConfigState {
  return {
    organisations: tenants.map((t) => t.organisation),
    projects: tenants.map((t) => t.project),
    apiKeys: tenants.map((t) => t.key),
    gatewayModels: [...models],
  };
}

/** A started proxy with its base URL and the log lines it wrote. */
export interface TestProxy extends ProxyApp {
  /** e.g. http://127.0.0.1:PORT/v1 */
  baseUrl: string;
  /** Its PROXY_ID, as the admin sees it in acks. */
  proxyId: string;
  logs: string[];
}

/** Fake peers and upstream around proxies under test. */
export interface ProxyWorld {
  upstream: FakeUpstream;
  ledger: LedgerPeer;
  admin: ConfigPeer;
  proxies: TestProxy[];
  /** Starts a proxy on port 0 wired to the peers; `env` overrides its environment. */
  startProxy(env?: Record<string, string>): Promise<TestProxy>;
  /** An OpenAI client of a proxy, with retries off so every status is seen as sent. */
  client(apiKey: string, proxy?: TestProxy): OpenAI;
  close(): Promise<void>;
}

/** Counts of the calls a world has seen so far (upstream requests, Reserves, Settles, Releases): a refused request must add none. */
export function trafficOf(world: ProxyWorld): { upstream: number; reserve: number; settle: number; release: number } {
  return {
    upstream: world.upstream.requests.length,
    reserve: world.ledger.calls.reserve.length,
    settle: world.ledger.calls.settle.length,
    release: world.ledger.calls.release.length,
  };
}

/** The Settle of the world's last Reserve, once it has landed (it runs right after its response). */
export async function lastSettleOf(world: ProxyWorld): Promise<ledgerV1.SettleRequest> {
  const reservationId = world.ledger.calls.reserve.at(-1)!.reservationId;
  await waitFor(() => world.ledger.calls.settle.some((settle) => settle.reservationId === reservationId), 5000, 'settle');
  return world.ledger.calls.settle.filter((settle) => settle.reservationId === reservationId).at(-1)!;
}

/** Polls a condition every 10 ms until true, failing after timeoutMs. */
export async function waitFor(condition: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Starts a fake upstream, a ledger peer and a config peer whose state comes from `build`
 * (given the upstream's base URL). Proxies started from the world are closed with it.
 */
export async function startProxyWorld(
  build: (upstreamBaseUrl: string) => ConfigState,
  options: { heartbeatIntervalMs?: number; requiredApiKey?: string; promptCache?: PrefixCacheOptions } = {},
): Promise<ProxyWorld> {
  const upstream = await startFakeUpstream({
    requiredApiKey: options.requiredApiKey ?? 'sk-upstream-credential-123', ...(options.promptCache === undefined ? {} : { promptCache: options.promptCache }),
  });
  const ledger = await startLedgerPeer();
  const admin = await startConfigPeer(build(upstream.baseUrl), options);
  const proxies: TestProxy[] = [];

  return {
    upstream, ledger, admin, proxies,
    async startProxy(env = {}) {
      const logs: string[] = [];
      const destination = new Writable({ write(chunk, _encoding, done) { logs.push(String(chunk)); done(); } });
      const proxyId = `test-proxy-${proxies.length}`;
      const config = loadProxyConfig({
        ...serviceTlsEnv(await sharedTestPki(), 'proxy'),
        PROXY_HTTP_PORT: '0', PROXY_METRICS_PORT: '0', ADMIN_GRPC_URL: admin.address, LEDGER_GRPC_URL: ledger.address, PROXY_ID: proxyId,
        // The outbox repeats Settles quickly in tests (10 ms doubling up to 100 ms). Credit grants are
        // off unless a test turns them on: most tests count the exact path's ledger calls.
        PROXY_SETTLE_RETRY_INITIAL_MS: '10', PROXY_SETTLE_RETRY_MAX_MS: '100', PROXY_CREDIT_GRANTS: 'off', ...env,
      });
      // Tracing off whatever the shell's OTEL_* say: a test run exports nothing.
      const app = await createProxyApp(config, { logger: createLogger('proxy', 'debug', destination), tracing: tracingOff });
      const proxy: TestProxy = { ...app, baseUrl: `http://127.0.0.1:${app.ports.http}/v1`, proxyId, logs };
      proxies.push(proxy);
      return proxy;
    },
    client(apiKey, proxy = proxies[0]) {
      if (proxy === undefined) throw new Error('start a proxy first');
      return new OpenAI({ apiKey, baseURL: proxy.baseUrl, maxRetries: 0 });
    },
    async close() {
      await Promise.all(proxies.map((proxy) => proxy.close()));
      await Promise.all([upstream.close(), ledger.close(), admin.close()]);
    },
  };
}
