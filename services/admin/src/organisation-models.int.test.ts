/**
 * GET /admin/v1/organisations/{id}/models on real PostgreSQL: every member (a viewer too) reads
 * the organisation's allowed models with their kinds, the aliases that reach them for this
 * organisation and their exact customer prices per token class, plus the proxy's public base URL;
 * provider costs and upstream targets never appear; another organisation's member gets 404.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import type { AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { newMember } from './test-support/people-client.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);

let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let organisationId: string;
let otherOrganisationId: string;

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl, {
    env: { ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true', ADMIN_PROXY_PUBLIC_URL: 'https://gateway.example.com/v1/' },
  });
  ({ admin } = postgres);
  const upstream = (slug: string) => ({ provider_kind: 'openai_compatible', base_url: 'http://127.0.0.1:9/v1', model: `vendor-${slug}` });
  for (const body of [
    {
      slug: 'priced-chat', display_name: 'Priced chat', default_max_tokens: 32, max_context_tokens: 2048, input_modalities: ['text', 'image'],
      input_price_micros_per_mtok: '1250000', output_price_micros_per_mtok: '10000001', cached_input_price_micros_per_mtok: '125000',
      cache_write_5m_price_micros_per_mtok: '1562500', provider_input_cost_micros_per_mtok: '987654', provider_output_cost_micros_per_mtok: '7654321',
      upstream: upstream('priced-chat'),
    },
    {
      slug: 'priced-embed', kind: 'embedding', default_max_tokens: 1, max_context_tokens: 2048,
      input_price_micros_per_mtok: '20000', output_price_micros_per_mtok: '0', upstream: upstream('priced-embed'),
    },
    {
      slug: 'not-allowed', default_max_tokens: 32, max_context_tokens: 2048,
      input_price_micros_per_mtok: '1', output_price_micros_per_mtok: '1', upstream: upstream('not-allowed'),
    },
  ]) {
    const created = await admin.request('POST', '/admin/v1/gateway-models', body);
    expect(created.status, created.text).toBe(201);
  }
  const organisation = await admin.request('POST', '/admin/v1/organisations', { name: 'Priced', allowed_gateway_models: ['priced-chat', 'priced-embed'] });
  expect(organisation.status, organisation.text).toBe(201);
  organisationId = organisation.json.id;
  otherOrganisationId = (await admin.request('POST', '/admin/v1/organisations', { name: 'Elsewhere', allowed_gateway_models: ['not-allowed'] })).json.id;
  // A platform alias to an allowed model, one overridden by the organisation, and one to a model it may not use.
  for (const [alias, slug] of [['gpt-4o', 'priced-chat'], ['claude-haiku', 'not-allowed'], ['fast', 'not-allowed']]) {
    expect((await admin.request('PUT', `/admin/v1/model-aliases/${alias}`, { gateway_model: slug })).status).toBe(201);
  }
  // The organisation's own: one overriding the platform's "fast", one of its own.
  for (const [alias, slug] of [['fast', 'priced-chat'], ['my-embeddings', 'priced-embed']]) {
    expect((await admin.request('PUT', `/admin/v1/organisations/${organisationId}/model-aliases/${alias}`, { gateway_model: slug })).status).toBe(201);
  }
});

afterAll(async () => {
  await postgres?.close();
});

itPg('shows a viewer the allowed models, their aliases and exact prices per token class, never provider costs', async () => {
  const viewer = await newMember(admin, organisationId, 'viewer', 'models-viewer');
  const answer = await viewer.request('GET', `/admin/v1/organisations/${organisationId}/models`);
  expect(answer.status, answer.text).toBe(200);
  expect(answer.json).toEqual({
    object: 'list',
    api_base_url: 'https://gateway.example.com/v1',
    data: [
      {
        object: 'organisation_model', slug: 'priced-chat', display_name: 'Priced chat', kind: 'chat', aliases: ['fast', 'gpt-4o'],
        prices: [
          { token_class: 'input', price_micros_per_mtok: '1250000' },
          { token_class: 'cached_input', price_micros_per_mtok: '125000' },
          { token_class: 'cache_write_5m', price_micros_per_mtok: '1562500' },
          // Not given on create: the input price.
          { token_class: 'cache_write_1h', price_micros_per_mtok: '1250000' },
          { token_class: 'image_input', price_micros_per_mtok: '1250000' },
          { token_class: 'output', price_micros_per_mtok: '10000001' },
          // No reasoning price of its own: priced as output.
          { token_class: 'reasoning', price_micros_per_mtok: '10000001' },
        ],
      },
      {
        object: 'organisation_model', slug: 'priced-embed', display_name: 'priced-embed', kind: 'embedding', aliases: ['my-embeddings'],
        prices: [{ token_class: 'input', price_micros_per_mtok: '20000' }],
      },
    ],
  });
  expect(answer.text).not.toMatch(/987654|7654321|provider|upstream|127\.0\.0\.1/);
});

itPg('answers 404 to a member of another organisation, as for an unknown one', async () => {
  const stranger = await newMember(admin, otherOrganisationId, 'owner', 'models-stranger');
  expect((await stranger.request('GET', `/admin/v1/organisations/${organisationId}/models`)).status).toBe(404);
  const own = await stranger.request('GET', `/admin/v1/organisations/${otherOrganisationId}/models`);
  expect(own.status).toBe(200);
  expect(own.json.data.map((model: { slug: string; aliases: string[] }) => [model.slug, model.aliases])).toEqual([['not-allowed', ['claude-haiku', 'fast']]]);
});
