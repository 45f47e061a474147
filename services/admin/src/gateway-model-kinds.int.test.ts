/**
 * Gateway model kinds (chat, embedding) and input modalities through the admin API over real
 * PostgreSQL: created, shown, changed (input_modalities may change, kind may not) and pushed to
 * proxies; an embedding model's rules (an OpenAI-compatible provider kind, no output price or
 * cost, text only) on create and on update, each refusal naming its field and storing nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { errorResponse } from './common/http/response-schemas.ts';
import { gatewayModelResponse } from './catalog/http/catalog-schemas.ts';
import { startAdminHarness, type AdminHarness, type HarnessResponse } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { connectFakeProxy, type FakeProxy } from './test-support/fake-proxy.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let proxy: FakeProxy;

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

/** An embedding model's create body: no default_max_tokens, no output price. */
function embeddingBody(slug: string, overrides: Record<string, unknown> = {}) {
  return {
    slug, kind: 'embedding', max_context_tokens: 8191, input_price_micros_per_mtok: '20000',
    upstream: { provider_kind: 'openai', base_url: 'https://api.openai.com/v1', model: 'text-embedding-3-small', api_key: 'sk-vendor-embed' },
    ...overrides,
  };
}

/** A chat model's create body. */
function chatBody(slug: string, overrides: Record<string, unknown> = {}) {
  return {
    slug, default_max_tokens: 64, max_context_tokens: 4096, input_price_micros_per_mtok: '2000000', output_price_micros_per_mtok: '5000000',
    upstream: { provider_kind: 'openai_compatible', base_url: 'https://llm.example.com/v1', model: 'vendor-chat' },
    ...overrides,
  };
}

function expectError(response: HarnessResponse, param: string, message?: string): void {
  expect(response.status, response.text).toBe(400);
  const body = errorResponse.parse(response.json);
  expect([body.error.code, body.error.param]).toEqual(['invalid_request', param]);
  if (message !== undefined) expect(body.error.message).toContain(message);
}

/** The last version of a model proxies were sent. */
function pushed(slug: string) {
  return proxy.updates.flatMap((update) => update.gatewayModels).filter((model) => model.slug === slug).at(-1);
}

async function storedRow(slug: string): Promise<Record<string, unknown> | undefined> {
  const { rows } = await db.query<Record<string, unknown>>(
    'SELECT kind, input_modalities, default_max_tokens, output_price_micros_per_mtok FROM gateway_models WHERE slug = $1', [slug],
  );
  return rows[0];
}

async function modelCount(): Promise<number> {
  const { rows } = await db.query<{ count: string }>('SELECT count(*) AS count FROM gateway_models');
  return Number(rows[0]!.count);
}

describe('kind and input_modalities', () => {
  itPg('a chat model defaults to kind chat and text only; given modalities are stored, shown and pushed (text implied on the wire)', async () => {
    const plain = await admin.request('POST', '/admin/v1/gateway-models', chatBody('kinds-plain'));
    expect(plain.status, plain.text).toBe(201);
    expect(gatewayModelResponse.parse(plain.json)).toMatchObject({ kind: 'chat', input_modalities: ['text'] });

    const vision = await admin.request('POST', '/admin/v1/gateway-models', chatBody('kinds-vision', { input_modalities: ['text', 'image'] }));
    expect(vision.status, vision.text).toBe(201);
    expect(vision.json).toMatchObject({ kind: 'chat', input_modalities: ['text', 'image'] });
    expect((await admin.request('GET', '/admin/v1/gateway-models/kinds-vision')).json).toMatchObject({ kind: 'chat', input_modalities: ['text', 'image'] });
    expect(await storedRow('kinds-vision')).toMatchObject({ kind: 'chat', input_modalities: ['text', 'image'] });
    // The call returned once the proxy had acknowledged the version that holds the model.
    expect(pushed('kinds-vision')).toMatchObject({ kind: 'chat', inputModalities: ['image'] });
    expect(pushed('kinds-plain')).toMatchObject({ kind: 'chat', inputModalities: [] });
  });

  itPg('an embedding model is created without default_max_tokens or an output price, shown, stored and pushed as such', async () => {
    const created = await admin.request('POST', '/admin/v1/gateway-models', embeddingBody('kinds-embed'));
    expect(created.status, created.text).toBe(201);
    expect(gatewayModelResponse.parse(created.json)).toMatchObject({
      slug: 'kinds-embed', kind: 'embedding', input_modalities: ['text'], default_max_tokens: 1, max_context_tokens: 8191,
      input_price_micros_per_mtok: '20000', output_price_micros_per_mtok: '0', provider_output_cost_micros_per_mtok: '0',
    });
    expect(await storedRow('kinds-embed')).toEqual({ kind: 'embedding', input_modalities: ['text'], default_max_tokens: 1, output_price_micros_per_mtok: 0n });
    expect(pushed('kinds-embed')).toMatchObject({
      kind: 'embedding', inputModalities: [], defaultMaxTokens: 1, maxContextTokens: 8191, outputPriceMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 0n,
    });

    // Giving what a chat model gives is accepted too: a default_max_tokens (never read) and a zero output price and text.
    const explicit = await admin.request('POST', '/admin/v1/gateway-models', embeddingBody('kinds-embed-explicit', {
      default_max_tokens: 512, output_price_micros_per_mtok: '0', provider_output_cost_micros_per_mtok: 0, input_modalities: ['text'],
    }));
    expect(explicit.status, explicit.text).toBe(201);
    expect(explicit.json).toMatchObject({ kind: 'embedding', default_max_tokens: 512, output_price_micros_per_mtok: '0' });
  });

  itPg('PATCH changes input_modalities (stored, shown, pushed) and refuses to change kind', async () => {
    const patched = await admin.request('PATCH', '/admin/v1/gateway-models/kinds-plain', { input_modalities: ['text', 'audio'] });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json).toMatchObject({ kind: 'chat', input_modalities: ['text', 'audio'] });
    expect(await storedRow('kinds-plain')).toMatchObject({ input_modalities: ['text', 'audio'] });
    expect(pushed('kinds-plain')).toMatchObject({ kind: 'chat', inputModalities: ['audio'] });

    // A PATCH without input_modalities keeps them (COALESCE of the text[] column).
    const renamed = await admin.request('PATCH', '/admin/v1/gateway-models/kinds-plain', { display_name: 'Plain, renamed' });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.json.input_modalities).toEqual(['text', 'audio']);
    expect(await storedRow('kinds-plain')).toMatchObject({ input_modalities: ['text', 'audio'] });

    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/kinds-plain', { kind: 'embedding' }), 'kind');
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/kinds-embed', { kind: 'chat' }), 'kind');
    expect(await storedRow('kinds-plain')).toMatchObject({ kind: 'chat' });
    expect(await storedRow('kinds-embed')).toMatchObject({ kind: 'embedding' });
  });
});

describe('what a chat model may take', () => {
  itPg('refuses audio for an Anthropic model on create and on PATCH (its API takes none), naming input_modalities, and changes nothing', async () => {
    const anthropic = { provider_kind: 'anthropic', base_url: 'https://api.anthropic.com/v1', model: 'vendor-claude' };
    const before = await modelCount();
    expectError(
      await admin.request('POST', '/admin/v1/gateway-models', chatBody('kinds-claude', { input_modalities: ['text', 'audio'], upstream: anthropic })),
      'input_modalities', 'no audio',
    );
    expect(await modelCount()).toBe(before);
    const created = await admin.request('POST', '/admin/v1/gateway-models', chatBody('kinds-claude', { input_modalities: ['text', 'image'], upstream: anthropic }));
    expect(created.status, created.text).toBe(201);
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/kinds-claude', { input_modalities: ['text', 'image', 'audio'] }), 'input_modalities', 'no audio');
    expect(await storedRow('kinds-claude')).toMatchObject({ input_modalities: ['text', 'image'] });
  });
});

describe('the rules of an embedding model', () => {
  itPg.each<[string, Record<string, unknown>, string]>([
    ['an Anthropic upstream', { upstream: { provider_kind: 'anthropic', base_url: 'https://api.anthropic.com/v1', model: 'claude' } }, 'upstream.provider_kind'],
    ['an output price', { output_price_micros_per_mtok: '1' }, 'output_price_micros_per_mtok'],
    ['a provider output cost', { provider_output_cost_micros_per_mtok: '5' }, 'provider_output_cost_micros_per_mtok'],
    ['image input', { input_modalities: ['text', 'image'] }, 'input_modalities'],
  ])('refuses a create with %s, naming the field, and stores nothing', async (_name, overrides, param) => {
    const before = await modelCount();
    expectError(await admin.request('POST', '/admin/v1/gateway-models', embeddingBody('kinds-refused', overrides)), param, `${param}:`);
    expect(await modelCount()).toBe(before);
  });

  itPg('names every broken rule of one body at once', async () => {
    const response = await admin.request('POST', '/admin/v1/gateway-models', embeddingBody('kinds-refused', {
      output_price_micros_per_mtok: '7', input_modalities: ['text', 'audio'],
      upstream: { provider_kind: 'anthropic', base_url: 'https://api.anthropic.com/v1', model: 'claude' },
    }));
    expect(response.status).toBe(400);
    for (const field of ['upstream.provider_kind', 'output_price_micros_per_mtok', 'input_modalities']) expect(response.json.error.message).toContain(`${field}:`);
  });

  itPg('a chat model still needs default_max_tokens and an output price', async () => {
    const before = await modelCount();
    const { default_max_tokens: _max, ...withoutMax } = chatBody('kinds-chat-refused');
    expectError(await admin.request('POST', '/admin/v1/gateway-models', withoutMax), 'default_max_tokens', 'default_max_tokens: is required');
    const { output_price_micros_per_mtok: _price, ...withoutPrice } = chatBody('kinds-chat-refused');
    expectError(await admin.request('POST', '/admin/v1/gateway-models', withoutPrice), 'output_price_micros_per_mtok', 'output_price_micros_per_mtok: is required');
    expect(await modelCount()).toBe(before);
  });

  itPg.each<[string, Record<string, unknown>, string]>([
    ['an output price', { output_price_micros_per_mtok: '3' }, 'output_price_micros_per_mtok'],
    ['a provider output cost', { provider_output_cost_micros_per_mtok: '3' }, 'provider_output_cost_micros_per_mtok'],
    ['audio input', { input_modalities: ['text', 'audio'] }, 'input_modalities'],
  ])('refuses a PATCH giving an embedding model %s, and changes nothing', async (_name, changes, param) => {
    const before = (await admin.request('GET', '/admin/v1/gateway-models/kinds-embed')).json;
    const versions = proxy.updates.length;
    expectError(await admin.request('PATCH', '/admin/v1/gateway-models/kinds-embed', { display_name: 'Changed?', ...changes }), param, `${param}:`);
    expect((await admin.request('GET', '/admin/v1/gateway-models/kinds-embed')).json).toEqual(before);
    expect(proxy.updates.slice(versions).flatMap((update) => update.gatewayModels).filter((model) => model.slug === 'kinds-embed')).toEqual([]);
  });

  itPg('a PATCH of an embedding model may change its input price and keep its output price 0; a chat model may take any', async () => {
    const patched = await admin.request('PATCH', '/admin/v1/gateway-models/kinds-embed', { input_price_micros_per_mtok: '130000', output_price_micros_per_mtok: '0' });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json).toMatchObject({ input_price_micros_per_mtok: '130000', output_price_micros_per_mtok: '0' });
    expect(pushed('kinds-embed')).toMatchObject({ inputPriceMicrosPerMtok: 130_000n, outputPriceMicrosPerMtok: 0n });
    const chat = await admin.request('PATCH', '/admin/v1/gateway-models/kinds-plain', { output_price_micros_per_mtok: '6000000', input_modalities: ['text', 'image', 'audio'] });
    expect(chat.status, chat.text).toBe(200);
  });
});

describe('the demo models', () => {
  let demoDatabase: TestDatabase;
  let demoAdmin: AdminHarness;

  beforeAll(async () => {
    if (!serverUrl) return;
    demoDatabase = await createTestDatabase(serverUrl);
    demoAdmin = await startAdminHarness({
      databaseUrl: demoDatabase.url,
      env: { SNAPSHOT_ACK_TIMEOUT_MS: '300', DEMO_UPSTREAM_URL: 'http://127.0.0.1:8788/v1/', ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true' },
    });
  });

  afterAll(async () => {
    await demoAdmin?.close();
    await demoDatabase?.drop();
  });

  itPg('seeds demo-embedding beside demo on the demo upstream, as an embedding model priced by input tokens only', async () => {
    const response = await demoAdmin.request('GET', '/admin/v1/gateway-models/demo-embedding');
    expect(response.status, response.text).toBe(200);
    expect(gatewayModelResponse.parse(response.json)).toEqual({
      slug: 'demo-embedding', display_name: 'Demo embeddings (built-in demo upstream, no provider account)',
      kind: 'embedding', input_modalities: ['text'],
      reasoning_efforts: [], thinking_modes: [], max_thinking_budget_tokens: 0, returns_reasoning: false, default_max_tokens: 1, max_context_tokens: 8192,
      input_price_micros_per_mtok: '1000000', output_price_micros_per_mtok: '0',
      provider_input_cost_micros_per_mtok: '0', provider_output_cost_micros_per_mtok: '0',
      cached_input_price_micros_per_mtok: '1000000', cache_write_5m_price_micros_per_mtok: '1000000', cache_write_1h_price_micros_per_mtok: '1000000',
      reasoning_price_micros_per_mtok: null, audio_input_price_micros_per_mtok: '1000000', image_input_price_micros_per_mtok: '1000000',
      provider_cached_input_cost_micros_per_mtok: '0', provider_cache_write_5m_cost_micros_per_mtok: '0', provider_cache_write_1h_cost_micros_per_mtok: '0',
      provider_reasoning_cost_micros_per_mtok: null, provider_audio_input_cost_micros_per_mtok: '0', provider_image_input_cost_micros_per_mtok: '0',
      upstream: { provider_kind: 'openai_compatible', base_url: 'http://127.0.0.1:8788/v1', model: 'demo-embedding', has_api_key: false, allow_private_network: false, priority: 0, weight: 1 },
      created_at: response.json.created_at,
    });
    expect((await demoAdmin.request('GET', '/admin/v1/gateway-models/demo')).json.kind).toBe('chat');
  });
});
