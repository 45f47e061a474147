/**
 * Every upstream provider kind the proxy serves, through the admin API over real PostgreSQL:
 * accepted, stored, returned and pushed to proxies; the SSRF rule for each; Azure's
 * `?api-version=…` (and no other query); the database's CHECK constraint.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '@gateway/db';
import { testPostgresUrl } from '@gateway/testkit';
import { providerKinds, type ProviderKind } from './catalog/domain/provider-kinds.ts';
import { errorResponse } from './common/http/response-schemas.ts';
import { gatewayModelResponse } from './catalog/http/catalog-schemas.ts';
import type { AdminHarness, HarnessResponse } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { connectFakeProxy, type FakeProxy } from './test-support/fake-proxy.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);

let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let proxy: FakeProxy;
const upstreamCredential = `sk-vendor-${randomBytes(12).toString('hex')}`;

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl, { poolSize: 1, env: { SNAPSHOT_ACK_TIMEOUT_MS: '2000' } });
  ({ admin, db } = postgres);
  proxy = connectFakeProxy(admin.grpcTarget, 'kinds-proxy', { autoAck: true });
  await proxy.next((update) => update.full);
});

afterAll(async () => {
  proxy?.close();
  await postgres?.close();
});

/** A public base URL of the kind's shape (see docs/admin-api.md). */
const baseUrlOf: Record<ProviderKind, string> = {
  openai_compatible: 'https://llm.example.com/v1',
  openai: 'https://api.openai.com/v1',
  azure_openai: 'https://acme.openai.azure.com/openai/deployments/gpt-4o-mini',
  vllm: 'https://vllm.example.com/v1',
  ollama: 'https://ollama.example.com/v1',
  groq: 'https://api.groq.com/openai/v1',
  together: 'https://api.together.xyz/v1',
  anthropic: 'https://api.anthropic.com/v1',
};

function modelBody(slug: string, providerKind: string, baseUrl: string) {
  return {
    slug, default_max_tokens: 64, max_context_tokens: 4096,
    input_price_micros_per_mtok: '2000000', output_price_micros_per_mtok: '5000000',
    upstream: { provider_kind: providerKind, base_url: baseUrl, model: 'vendor-model', api_key: upstreamCredential },
  };
}

function expectError(response: HarnessResponse, status: number, code: string, param: string): void {
  expect(response.status, response.text).toBe(status);
  const body = errorResponse.parse(response.json);
  expect([body.error.code, body.error.param]).toEqual([code, param]);
  expect(response.text).not.toContain(upstreamCredential);
}

async function modelCount(): Promise<number> {
  const { rows } = await db.query<{ count: string }>('SELECT count(*) AS count FROM gateway_models');
  return Number(rows[0]!.count);
}

describe('provider kinds', () => {
  itPg.each(providerKinds)('accepts %s, returns it, and pushes it to proxies before the call returns', async (kind) => {
    const slug = `kind-${kind.replaceAll('_', '-')}`;
    const response = await admin.request('POST', '/admin/v1/gateway-models', modelBody(slug, kind, `${baseUrlOf[kind]}/`));
    expect(response.status, response.text).toBe(201);
    expect(response.headers.get('x-config-propagation')).toBeNull();
    const model = gatewayModelResponse.parse(response.json);
    expect(model.upstream).toEqual({ provider_kind: kind, base_url: baseUrlOf[kind], model: 'vendor-model', has_api_key: true, allow_private_network: false, priority: 0, weight: 1 });
    expect(gatewayModelResponse.parse((await admin.request('GET', `/admin/v1/gateway-models/${slug}`)).json).upstream.provider_kind).toBe(kind);
    const pushed = proxy.updates.flatMap((update) => update.gatewayModels).filter((m) => m.slug === slug).at(-1);
    expect(pushed?.upstream).toEqual({ providerKind: kind, baseUrl: baseUrlOf[kind], model: 'vendor-model', apiKey: upstreamCredential });
  });

  itPg('refuses an unknown kind naming the accepted ones, and stores nothing', async () => {
    const before = await modelCount();
    const response = await admin.request('POST', '/admin/v1/gateway-models', modelBody('kind-pigeon', 'carrier_pigeon', baseUrlOf.openai));
    expectError(response, 400, 'invalid_request', 'upstream.provider_kind');
    for (const kind of providerKinds) expect(response.json.error.message).toContain(`"${kind}"`);
    expect(await modelCount()).toBe(before);
  });

  itPg.each(providerKinds)('applies the SSRF rule to %s', async (kind) => {
    const before = await modelCount();
    for (const baseUrl of ['https://10.0.0.5/v1', 'https://169.254.169.254/latest', 'http://api.example.com/v1', 'https://[::1]/v1', 'https://user:pw@api.example.com/v1']) {
      const response = await admin.request('POST', '/admin/v1/gateway-models', modelBody(`ssrf-${kind.replaceAll('_', '-')}`, kind, baseUrl));
      expectError(response, 400, 'invalid_request', 'upstream.base_url');
    }
    expect(await modelCount()).toBe(before);
  });

  itPg('lets only azure_openai carry ?api-version=…, and no other query', async () => {
    const deployment = `${baseUrlOf.azure_openai}/?api-version=2025-04-01-preview`;
    const created = await admin.request('POST', '/admin/v1/gateway-models', modelBody('azure-pinned', 'azure_openai', deployment));
    expect(created.status, created.text).toBe(201);
    expect(created.json.upstream.base_url).toBe(`${baseUrlOf.azure_openai}?api-version=2025-04-01-preview`);

    const before = await modelCount();
    const refused: Array<[string, string]> = [
      ['openai', `${baseUrlOf.openai}?api-version=2024-10-21`],
      ['azure_openai', `${baseUrlOf.azure_openai}?api-version=2024-10-21&key=${upstreamCredential}`],
      ['azure_openai', `${baseUrlOf.azure_openai}?key=abc`],
      ['azure_openai', `${baseUrlOf.azure_openai}?api-version=2024-10-21#x`],
      ['azure_openai', 'https://10.1.2.3/openai/deployments/d?api-version=2024-10-21'],
    ];
    for (const [kind, baseUrl] of refused) {
      expectError(await admin.request('POST', '/admin/v1/gateway-models', modelBody(`query-${randomBytes(3).toString('hex')}`, kind, baseUrl)),
        400, 'invalid_request', 'upstream.base_url');
    }
    expect(await modelCount()).toBe(before);

    // A PATCH judges the query by the stored kind.
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/kind-openai', { upstream: { base_url: `${baseUrlOf.openai}?api-version=2024-10-21` } }),
      400, 'invalid_request', 'upstream.base_url');
    expect((await admin.request('GET', '/admin/v1/gateway-models/kind-openai')).json.upstream.base_url).toBe(baseUrlOf.openai);
    const patched = await admin.request('PATCH', '/admin/v1/gateway-models/azure-pinned', { upstream: { base_url: `${baseUrlOf.azure_openai}?api-version=2024-10-21` } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json.upstream.base_url).toBe(`${baseUrlOf.azure_openai}?api-version=2024-10-21`);
  });

  itPg('keeps the database to the same list (CHECK constraint)', async () => {
    await expect(db.query(
      `INSERT INTO gateway_models (slug, display_name, default_max_tokens, max_context_tokens, input_price_micros_per_mtok,
         output_price_micros_per_mtok, provider_input_cost_micros_per_mtok, provider_output_cost_micros_per_mtok,
         provider_kind, upstream_base_url, upstream_model)
       VALUES ('db-pigeon', 'x', 1, 1, 0, 0, 0, 0, 'carrier_pigeon', 'https://x.example.com', 'm')`,
    )).rejects.toThrow(/provider_kind/);
  });
});
