/**
 * Model aliases in the admin (docs/model-aliases.md) on real PostgreSQL with a real grpc-js
 * config-stream client: who may set them (platform admins for the platform's, an organisation's
 * owners for its own), what is refused and with which field named, and that each change reaches
 * a connected proxy as a delta (platform aliases in ConfigUpdate 13-14, an organisation's with the
 * organisation, Organisation 6) and a new proxy in its full snapshot.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testPostgresUrl } from '@gateway/testkit';
import type { AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { connectFakeProxy, type FakeProxy } from './test-support/fake-proxy.ts';
import { newMember } from './test-support/people-client.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);

let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let organisationId: string;
let otherOrganisationId: string;
const proxies: FakeProxy[] = [];

function connect(proxyId: string): FakeProxy {
  const proxy = connectFakeProxy(admin.grpcTarget, proxyId, { autoAck: true });
  proxies.push(proxy);
  return proxy;
}

async function createModel(slug: string, kind: 'chat' | 'embedding'): Promise<void> {
  const created = await admin.request('POST', '/admin/v1/gateway-models', {
    slug, default_max_tokens: 32, max_context_tokens: 2048, kind,
    input_price_micros_per_mtok: '1000000', output_price_micros_per_mtok: kind === 'chat' ? '2000000' : '0',
    upstream: { provider_kind: 'openai_compatible', base_url: 'http://127.0.0.1:9/v1', model: `vendor-${slug}` },
  });
  expect(created.status, created.text).toBe(201);
}

beforeAll(async () => {
  if (!serverUrl) return;
  postgres = await startPostgresAdmin(serverUrl, { env: { SNAPSHOT_ACK_TIMEOUT_MS: '2000', ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true' } });
  ({ admin } = postgres);
  await createModel('house-chat', 'chat');
  await createModel('house-fast', 'chat');
  await createModel('house-embed', 'embedding');
  const organisation = await admin.request('POST', '/admin/v1/organisations', { name: 'Aliased', allowed_gateway_models: ['house-chat', 'house-embed'] });
  expect(organisation.status, organisation.text).toBe(201);
  organisationId = organisation.json.id;
  otherOrganisationId = (await admin.request('POST', '/admin/v1/organisations', { name: 'Other', allowed_gateway_models: ['house-fast'] })).json.id;
});

afterEach(() => { for (const proxy of proxies.splice(0)) proxy.close(); });

afterAll(async () => {
  await postgres?.close();
});

describe('platform model aliases', () => {
  itPg('are set and retargeted by a platform admin, each change reaching a connected proxy as a delta', async () => {
    const proxy = connect('proxy-platform-aliases');
    await proxy.next((update) => update.full);

    const created = await admin.request('PUT', '/admin/v1/model-aliases/claude-sonnet-4-5-20250929', { gateway_model: 'house-chat' });
    expect(created.status, created.text).toBe(201);
    expect(created.json).toMatchObject({ object: 'model_alias', alias: 'claude-sonnet-4-5-20250929', gateway_model: 'house-chat' });
    const delta = await proxy.next((update) => !update.full && Object.keys(update.platformModelAliases).length > 0);
    expect(delta.platformModelAliases).toEqual({ 'claude-sonnet-4-5-20250929': 'house-chat' });
    expect(created.headers.get('x-config-propagation')).toBeNull();

    const retargeted = await admin.request('PUT', '/admin/v1/model-aliases/claude-sonnet-4-5-20250929', { gateway_model: 'house-fast' });
    expect(retargeted.status, retargeted.text).toBe(200);
    await proxy.next((update) => update.platformModelAliases['claude-sonnet-4-5-20250929'] === 'house-fast');

    // A name with a slash travels whole (as a slug may).
    expect((await admin.request('PUT', '/admin/v1/model-aliases/vendor/gpt-5-codex', { gateway_model: 'house-chat' })).status).toBe(201);
    const listed = await admin.request('GET', '/admin/v1/model-aliases');
    expect(listed.json.data.map((alias: { alias: string; gateway_model: string }) => [alias.alias, alias.gateway_model])).toEqual([
      ['claude-sonnet-4-5-20250929', 'house-fast'], ['vendor/gpt-5-codex', 'house-chat'],
    ]);

    const deleted = await admin.request('DELETE', '/admin/v1/model-aliases/vendor/gpt-5-codex');
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.json).toEqual({ object: 'model_alias', alias: 'vendor/gpt-5-codex', deleted: true });
    const removal = await proxy.next((update) => update.removedPlatformModelAliases.length > 0);
    expect(removal.removedPlatformModelAliases).toEqual(['vendor/gpt-5-codex']);
    const again = await admin.request('DELETE', '/admin/v1/model-aliases/vendor/gpt-5-codex');
    expect(again.status).toBe(404);
    expect(again.json.error).toMatchObject({ code: 'not_found', param: 'alias' });
  });

  itPg('refuses, naming the field: an alias that is a slug, a bad name, an unknown or missing target', async () => {
    const slug = await admin.request('PUT', '/admin/v1/model-aliases/house-fast', { gateway_model: 'house-chat' });
    expect(slug.status).toBe(409);
    expect(slug.json.error).toMatchObject({ code: 'conflict', param: 'alias' });

    const badName = await admin.request('PUT', '/admin/v1/model-aliases/_hidden', { gateway_model: 'house-chat' });
    expect(badName.status).toBe(400);
    expect(badName.json.error).toMatchObject({ param: 'alias' });

    const unknown = await admin.request('PUT', '/admin/v1/model-aliases/gpt-5-codex', { gateway_model: 'no-such-model' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatchObject({ param: 'gateway_model' });
    expect(unknown.json.error.message).toContain('no-such-model');

    const missing = await admin.request('PUT', '/admin/v1/model-aliases/gpt-5-codex', {});
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatchObject({ param: 'gateway_model' });
  });

  itPg('keeps a new gateway model from taking a slug an alias uses (409 naming slug)', async () => {
    expect((await admin.request('PUT', '/admin/v1/model-aliases/claude-haiku-4-5', { gateway_model: 'house-chat' })).status).toBe(201);
    const taken = await admin.request('POST', '/admin/v1/gateway-models', {
      slug: 'claude-haiku-4-5', default_max_tokens: 32, max_context_tokens: 2048, input_price_micros_per_mtok: '1', output_price_micros_per_mtok: '1',
      upstream: { provider_kind: 'openai_compatible', base_url: 'http://127.0.0.1:9/v1', model: 'vendor-x' },
    });
    expect(taken.status).toBe(409);
    expect(taken.json.error).toMatchObject({ code: 'conflict', param: 'slug' });
  });

  itPg('may be set only by platform admins; an organisation owner is refused (403) but may read them', async () => {
    const token = await admin.request('POST', `/admin/v1/organisations/${organisationId}/tokens`, { name: 'owner token' });
    expect(token.status, token.text).toBe(201);
    const asOwner = { authorization: `Bearer ${token.json.secret}` };
    const refused = await admin.request('PUT', '/admin/v1/model-aliases/gpt-5-codex', { gateway_model: 'house-chat' }, asOwner);
    expect(refused.status).toBe(403);
    expect((await admin.request('DELETE', '/admin/v1/model-aliases/claude-haiku-4-5', undefined, asOwner)).status).toBe(403);
    const read = await admin.request('GET', '/admin/v1/model-aliases', undefined, asOwner);
    expect(read.status).toBe(200);
    expect(read.json.data.length).toBeGreaterThan(0);
  });
});

describe('organisation model aliases', () => {
  itPg('are set by the organisation\'s owners, travel with the organisation in deltas and full snapshots, and stay its own', async () => {
    const proxy = connect('proxy-organisation-aliases');
    await proxy.next((update) => update.full);
    const owner = await newMember(admin, organisationId, 'owner', 'alias-owner');
    const developer = await newMember(admin, organisationId, 'developer', 'alias-developer');
    const path = `/admin/v1/organisations/${organisationId}/model-aliases/claude-opus-4-1-20250805`;

    expect((await developer.request('PUT', path, { gateway_model: 'house-chat' })).status).toBe(403);
    const created = await owner.request('PUT', path, { gateway_model: 'house-chat' });
    expect(created.status, created.text).toBe(201);
    const delta = await proxy.next((update) => update.organisations.some((o) => o.id === organisationId && Object.keys(o.modelAliases).length > 0));
    expect(delta.organisations.find((o) => o.id === organisationId)!.modelAliases).toEqual({ 'claude-opus-4-1-20250805': 'house-chat' });

    // Members read them; another organisation's owner cannot see them (404, as for an unknown id).
    const listed = await developer.request('GET', `/admin/v1/organisations/${organisationId}/model-aliases`);
    expect(listed.status).toBe(200);
    expect(listed.json.data).toMatchObject([{ alias: 'claude-opus-4-1-20250805', gateway_model: 'house-chat' }]);
    const stranger = await newMember(admin, otherOrganisationId, 'owner', 'alias-stranger');
    expect((await stranger.request('GET', `/admin/v1/organisations/${organisationId}/model-aliases`)).status).toBe(404);
    expect((await stranger.request('PUT', path, { gateway_model: 'house-chat' })).status).toBe(404);

    // A new proxy gets them in its full snapshot, the platform's beside them.
    const late = connect('proxy-late');
    const full = await late.next((update) => update.full);
    expect(full.organisations.find((o) => o.id === organisationId)!.modelAliases).toEqual({ 'claude-opus-4-1-20250805': 'house-chat' });
    expect(full.organisations.find((o) => o.id === otherOrganisationId)!.modelAliases).toEqual({});
    expect(full.platformModelAliases).toMatchObject({ 'claude-sonnet-4-5-20250929': 'house-fast' });

    const deleted = await owner.request('DELETE', path);
    expect(deleted.status, deleted.text).toBe(200);
    await proxy.next((update) => update.organisations.some((o) => o.id === organisationId && Object.keys(o.modelAliases).length === 0));
  });

  itPg('refuses a target outside the allowed models, an override of another kind than the platform alias\'s, and a slug as a name', async () => {
    const base = `/admin/v1/organisations/${organisationId}/model-aliases`;
    const notAllowed = await admin.request('PUT', `${base}/my-fast`, { gateway_model: 'house-fast' });
    expect(notAllowed.status).toBe(400);
    expect(notAllowed.json.error).toMatchObject({ param: 'gateway_model' });
    expect(notAllowed.json.error.message).toContain('allowed');

    expect((await admin.request('PUT', '/admin/v1/model-aliases/text-embedding-3-small', { gateway_model: 'house-embed' })).status).toBe(201);
    const otherKind = await admin.request('PUT', `${base}/text-embedding-3-small`, { gateway_model: 'house-chat' });
    expect(otherKind.status).toBe(400);
    expect(otherKind.json.error).toMatchObject({ param: 'gateway_model' });

    const slug = await admin.request('PUT', `${base}/house-embed`, { gateway_model: 'house-chat' });
    expect(slug.status).toBe(409);
    expect(slug.json.error).toMatchObject({ param: 'alias' });
  });
});
