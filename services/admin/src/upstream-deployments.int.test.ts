/**
 * Upstream deployments over real PostgreSQL (docs/admin-api.md "Upstream deployments"): the
 * admin API creates, lists, reads, changes and deletes a gateway model's further upstreams with
 * the model's own SSRF rule and write-only credentials, audits every write, and the config
 * stream carries the complete list (the model's own upstream first as "primary", then by
 * priority and name, credentials decrypted), each change reaching a connected proxy as a delta.
 * Host names resolve through a table injected as the admin's resolver (no network needed).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { HostResolver } from '@gateway/address-policy';
import type { configV1 } from '@gateway/contracts';
import { openDatabase } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { upstreamDeploymentResponse } from './catalog/http/catalog-schemas.ts';
import { createCredentialCipher } from './common/domain/credential-cipher.ts';
import { reencryptSealedValues } from './key-rotation/reencrypt.ts';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { captureLogs } from './test-support/captured-logs.ts';
import { connectFakeProxy, type FakeProxy } from './test-support/fake-proxy.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);
const primaryCredential = `sk-primary-${randomBytes(8).toString('hex')}`;
const euCredential = `sk-eu-${randomBytes(8).toString('hex')}`;
const usCredential = `sk-us-${randomBytes(8).toString('hex')}`;

const dns = new Map<string, string[]>([
  ['rebound.example.test', ['127.0.0.1']],
  ['public.example.test', ['8.8.8.8']],
  ['moving.example.test', ['8.8.4.4']],
]);
const resolveHost: HostResolver = async (hostname) => {
  const addresses = dns.get(hostname);
  if (addresses === undefined) throw Object.assign(new Error(`no such name ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 as const : 4 as const }));
};

const databases: TestDatabase[] = [];
const admins: AdminHarness[] = [];
const proxies: FakeProxy[] = [];
afterEach(async () => {
  for (const proxy of proxies.splice(0)) proxy.close();
  await Promise.all(admins.splice(0).map((admin) => admin.close()));
});
afterAll(async () => { await Promise.all(databases.map((database) => database.drop())); });

async function freshDatabase(): Promise<string> {
  const database = await createTestDatabase(serverUrl!);
  databases.push(database);
  return database.url;
}

async function startAdmin(
  databaseUrl: string, options: { allowPrivate?: boolean; token?: string; encryptionKey?: string; logger?: ReturnType<typeof captureLogs>['logger'] } = {},
): Promise<AdminHarness> {
  const admin = await startAdminHarness({
    databaseUrl, resolveHost, ...(options.logger ? { logger: options.logger } : {}),
    ...(options.token === undefined ? {} : { token: options.token }), ...(options.encryptionKey === undefined ? {} : { encryptionKey: options.encryptionKey }),
    env: { SNAPSHOT_ACK_TIMEOUT_MS: '2000', ADMIN_ALLOW_PRIVATE_UPSTREAMS: String(options.allowPrivate ?? false) },
  });
  admins.push(admin);
  return admin;
}

function proxyOf(admin: AdminHarness, name: string): FakeProxy {
  const proxy = connectFakeProxy(admin.grpcTarget, name, { autoAck: true });
  proxies.push(proxy);
  return proxy;
}

/** A chat model `slug` whose own upstream has priority 2 and weight 5 and provider costs 100 / 200. */
async function createModel(admin: AdminHarness, slug: string, baseUrl = 'https://public.example.test/v1'): Promise<void> {
  const created = await admin.request('POST', '/admin/v1/gateway-models', {
    slug, default_max_tokens: 16, max_context_tokens: 1024, input_price_micros_per_mtok: '1000000', output_price_micros_per_mtok: '2000000',
    provider_input_cost_micros_per_mtok: '100', provider_output_cost_micros_per_mtok: '200',
    upstream: { provider_kind: 'openai_compatible', base_url: baseUrl, model: 'vendor-primary', api_key: primaryCredential, priority: 2, weight: 5 },
  });
  expect(created.status, created.text).toBe(201);
  expect(created.json.upstream).toMatchObject({ priority: 2, weight: 5 });
}

/** A deployment body for `model`, overridable field by field. */
function deploymentBody(model: string, name: string, upstream: Record<string, unknown> = {}, fields: Record<string, unknown> = {}) {
  return {
    gateway_model: model, name, ...fields,
    upstream: { provider_kind: 'openai_compatible', base_url: 'https://public.example.test/eu', model: 'vendor-eu', api_key: euCredential, ...upstream },
  };
}

/** The audit events of one resource, oldest first. */
async function auditOf(admin: AdminHarness, resourceId: string): Promise<Array<{ action: string; changes: Record<string, { before: unknown; after: unknown }> }>> {
  const events = (await admin.request('GET', '/admin/v1/audit-events?limit=100')).json.data as Array<{ action: string; resource_id: string; changes: Record<string, { before: unknown; after: unknown }> }>;
  return events.filter((event) => event.resource_id === resourceId).map(({ action, changes }) => ({ action, changes }));
}

const modelIn = (update: configV1.ConfigUpdate, slug: string) => update.gatewayModels.find((model) => model.slug === slug);
const namesOf = (model: configV1.GatewayModel | undefined) => model?.deployments.map((deployment) => deployment.name);

describe('the upstream deployments of a gateway model', () => {
  itPg('are created, listed, read, changed and deleted by the rules, their credentials never shown, every write audited', async () => {
    const admin = await startAdmin(await freshDatabase());
    await createModel(admin, 'multi');

    const created = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'azure-eu', {}, {
      priority: 1, weight: 3, provider_input_cost_micros_per_mtok: '300', provider_output_cost_micros_per_mtok: 400, provider_reasoning_cost_micros_per_mtok: '500',
    }));
    expect(created.status, created.text).toBe(201);
    const deployment = upstreamDeploymentResponse.parse(created.json);
    expect(deployment).toMatchObject({
      gateway_model: 'multi', name: 'azure-eu', priority: 1, weight: 3,
      upstream: { provider_kind: 'openai_compatible', base_url: 'https://public.example.test/eu', model: 'vendor-eu', has_api_key: true, allow_private_network: false },
      // Money exactly as the gateway model's JSON: decimal strings; input classes left out cost the input cost.
      provider_input_cost_micros_per_mtok: '300', provider_output_cost_micros_per_mtok: '400', provider_cached_input_cost_micros_per_mtok: '300',
      provider_cache_write_5m_cost_micros_per_mtok: '300', provider_cache_write_1h_cost_micros_per_mtok: '300', provider_reasoning_cost_micros_per_mtok: '500',
      provider_audio_input_cost_micros_per_mtok: '300', provider_image_input_cost_micros_per_mtok: '300',
    });
    expect(deployment.id).toMatch(/^udep_[0-9a-f]{24}$/);
    const { id } = deployment;

    const read = await admin.request('GET', `/admin/v1/upstream-deployments/${id}`);
    expect([read.status, read.json]).toEqual([200, created.json]);
    const defaults = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'us', { base_url: 'https://public.example.test/us/', api_key: undefined }));
    expect(defaults.status, defaults.text).toBe(201);
    expect(defaults.json).toMatchObject({
      priority: 0, weight: 1, upstream: { base_url: 'https://public.example.test/us', has_api_key: false },
      provider_input_cost_micros_per_mtok: '0', provider_reasoning_cost_micros_per_mtok: null,
    });
    await createModel(admin, 'other');
    expect((await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('other', 'azure-eu'))).status).toBe(201);

    const listed = await admin.request('GET', '/admin/v1/upstream-deployments?gateway_model=multi');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.json.data.map((entry: { name: string }) => entry.name)).toEqual(['azure-eu', 'us']);
    const everything = await admin.request('GET', '/admin/v1/upstream-deployments?limit=2');
    expect([everything.json.data.map((entry: { gateway_model: string; name: string }) => `${entry.gateway_model}/${entry.name}`), everything.json.has_more])
      .toEqual([['multi/azure-eu', 'multi/us'], true]);
    const next = await admin.request('GET', `/admin/v1/upstream-deployments?limit=2&after=${everything.json.data[1].id}`);
    expect([next.json.data.map((entry: { gateway_model: string }) => entry.gateway_model), next.json.has_more]).toEqual([['other'], false]);
    expect((await admin.request('GET', '/admin/v1/upstream-deployments?gateway_model=nobody')).status).toBe(404);

    // Conflicts and unknowns.
    const duplicate = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'azure-eu'));
    expect([duplicate.status, duplicate.json.error.code, duplicate.json.error.param]).toEqual([409, 'conflict', 'name']);
    const primary = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'primary'));
    expect([primary.status, primary.json.error.code, primary.json.error.param]).toEqual([409, 'conflict', 'name']);
    const unknownModel = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('nobody', 'x'));
    expect([unknownModel.status, unknownModel.json.error.code, unknownModel.json.error.param]).toEqual([404, 'not_found', 'gateway_model']);
    for (const path of ['udep_000000000000000000000000', 'not-an-id']) {
      expect((await admin.request('GET', `/admin/v1/upstream-deployments/${path}`)).status).toBe(404);
      expect((await admin.request('PATCH', `/admin/v1/upstream-deployments/${path}`, { weight: 2 })).status).toBe(404);
      expect((await admin.request('DELETE', `/admin/v1/upstream-deployments/${path}`)).status).toBe(404);
    }

    // Bad input: 400 in the error shape, naming the field.
    for (const [body, param] of [
      [deploymentBody('multi', 'Bad_Name'), 'name'],
      [deploymentBody('multi', 'x'.repeat(33)), 'name'],
      [deploymentBody('multi', 'ok', {}, { priority: 101 }), 'priority'],
      [deploymentBody('multi', 'ok', {}, { weight: 0 }), 'weight'],
      [deploymentBody('multi', 'ok', {}, { weight: 1001 }), 'weight'],
      [deploymentBody('multi', 'ok', { provider_kind: 'carrier-pigeon' }), 'upstream.provider_kind'],
      [deploymentBody('multi', 'ok', { api_key: 'has space' }), 'upstream.api_key'],
      [deploymentBody('multi', 'ok', {}, { provider_input_cost_micros_per_mtok: 1.5 }), 'provider_input_cost_micros_per_mtok'],
      [deploymentBody('multi', 'ok', {}, { surprise: true }), null],
      [{ gateway_model: 'multi', name: 'ok' }, 'upstream'],
      // The SSRF rule, exactly as the model's own upstream: literals and names that resolve inside.
      [deploymentBody('multi', 'ok', { base_url: 'http://10.1.2.3:8000/v1' }), 'upstream.base_url'],
      [deploymentBody('multi', 'ok', { base_url: 'https://169.254.169.254/latest' }), 'upstream.base_url'],
      [deploymentBody('multi', 'ok', { base_url: 'https://rebound.example.test/v1' }), 'upstream.base_url'],
      [deploymentBody('multi', 'ok', { base_url: 'https://public.example.test/v1?key=sk' }), 'upstream.base_url'],
    ] as const) {
      const refused = await admin.request('POST', '/admin/v1/upstream-deployments', body);
      expect(refused.status, `${JSON.stringify(body)} ${refused.text}`).toBe(400);
      expect(refused.json.error.code).toBe('invalid_request');
      if (param !== null) expect(refused.json.error.param).toBe(param);
      expect(refused.text).not.toContain('127.0.0.1');
    }
    // A provider kind that cannot serve the model as configured (anthropic takes no audio).
    await admin.request('PATCH', '/admin/v1/gateway-models/other', { input_modalities: ['text', 'audio'] });
    const wrongKind = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('other', 'claude', { provider_kind: 'anthropic' }));
    expect([wrongKind.status, wrongKind.json.error.param]).toEqual([400, 'upstream.provider_kind']);
    // The deployment's own exception allows a private upstream, as the model's does.
    const selfHosted = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'self-hosted', { base_url: 'http://10.1.2.3:8000/v1', allow_private_network: true }));
    expect(selfHosted.status, selfHosted.text).toBe(201);
    const turnedOff = await admin.request('PATCH', `/admin/v1/upstream-deployments/${selfHosted.json.id}`, { upstream: { allow_private_network: false } });
    expect([turnedOff.status, turnedOff.json.error.param]).toEqual([400, 'upstream.allow_private_network']);

    // Changes: priority, weight, costs, the credential replaced; the name, model and kind stay.
    const changed = await admin.request('PATCH', `/admin/v1/upstream-deployments/${id}`, {
      priority: 0, weight: 9, provider_output_cost_micros_per_mtok: '450', provider_reasoning_cost_micros_per_mtok: null, upstream: { api_key: `${euCredential}-2` },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json).toMatchObject({ priority: 0, weight: 9, provider_output_cost_micros_per_mtok: '450', provider_reasoning_cost_micros_per_mtok: null, upstream: { has_api_key: true } });
    expect(Date.parse(changed.json.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.json.updated_at));
    for (const [body, param] of [
      [{}, null], [{ name: 'renamed' }, null], [{ upstream: { provider_kind: 'openai' } }, null], [{ upstream: {} }, 'upstream'],
      [{ upstream: { base_url: 'https://rebound.example.test/v1' } }, 'upstream.base_url'], [{ weight: 0 }, 'weight'],
    ] as const) {
      const refused = await admin.request('PATCH', `/admin/v1/upstream-deployments/${id}`, body);
      expect(refused.status, `${JSON.stringify(body)} ${refused.text}`).toBe(400);
      if (param !== null) expect(refused.json.error.param).toBe(param);
    }
    const removedKey = await admin.request('PATCH', `/admin/v1/upstream-deployments/${defaults.json.id}`, { upstream: { api_key: usCredential } });
    expect(removedKey.json.upstream.has_api_key).toBe(true);
    expect((await admin.request('PATCH', `/admin/v1/upstream-deployments/${defaults.json.id}`, { upstream: { api_key: null } })).json.upstream.has_api_key).toBe(false);

    // The credential never appears in any answer, nor in the audit log.
    const answers = [created, read, changed, listed, await admin.request('GET', '/admin/v1/audit-events?limit=100')];
    for (const answer of answers) for (const secret of [euCredential, `${euCredential}-2`, usCredential]) expect(answer.text).not.toContain(secret);

    const deleted = await admin.request('DELETE', `/admin/v1/upstream-deployments/${id}`);
    expect([deleted.status, deleted.json]).toEqual([200, { object: 'upstream_deployment', id, deleted: true }]);
    expect((await admin.request('GET', `/admin/v1/upstream-deployments/${id}`)).status).toBe(404);
    expect((await admin.request('DELETE', `/admin/v1/upstream-deployments/${id}`)).status).toBe(404);

    const audit = await auditOf(admin, id);
    expect(audit.map((event) => event.action)).toEqual(['upstream_deployment.create', 'upstream_deployment.update', 'upstream_deployment.delete']);
    expect(audit[0]!.changes).toMatchObject({
      gateway_model: { before: null, after: 'multi' }, name: { before: null, after: 'azure-eu' }, priority: { before: null, after: 1 },
      'upstream.api_key': { before: null, after: '(set)' }, provider_input_cost_micros_per_mtok: { before: null, after: '300' },
    });
    expect(audit[1]!.changes).toEqual({
      priority: { before: 1, after: 0 }, weight: { before: 3, after: 9 }, provider_output_cost_micros_per_mtok: { before: '400', after: '450' },
      provider_reasoning_cost_micros_per_mtok: { before: '500', after: null }, 'upstream.api_key': { before: '(set)', after: '(replaced)' },
    });
    expect(audit[2]!.changes).toMatchObject({ name: { before: 'azure-eu', after: null } });
  });

  itPg('are at most 16 per model, the model\'s own upstream included', async () => {
    const admin = await startAdmin(await freshDatabase());
    await createModel(admin, 'crowded');
    for (let index = 1; index <= 15; index += 1) {
      const created = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('crowded', `d${index}`, index === 1 ? { provider_kind: 'anthropic' } : {}));
      expect(created.status, created.text).toBe(201);
    }
    const sixteenth = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('crowded', 'd16'));
    expect([sixteenth.status, sixteenth.json.error.code]).toEqual([409, 'conflict']);
    expect(sixteenth.json.error.message).toContain('16');

    // The model keeps to what every deployment's kind serves: d1 is anthropic (no audio, no "xhigh" effort).
    const audio = await admin.request('PATCH', '/admin/v1/gateway-models/crowded', { input_modalities: ['text', 'audio'] });
    expect([audio.status, audio.json.error.param]).toEqual([400, 'input_modalities']);
    const effort = await admin.request('PATCH', '/admin/v1/gateway-models/crowded', { reasoning_efforts: ['xhigh'] });
    expect([effort.status, effort.json.error.param]).toEqual([400, 'reasoning_efforts']);
    expect((await admin.request('PATCH', '/admin/v1/gateway-models/crowded', { reasoning_efforts: ['high'] })).status).toBe(200);
  });

  itPg('reach proxies with the model: the complete list, its own upstream first as "primary", then by priority and name, credentials decrypted', async () => {
    const admin = await startAdmin(await freshDatabase());
    const proxy = proxyOf(admin, 'proxy-deployments');
    await proxy.next((update) => update.full);
    await createModel(admin, 'multi');
    const alone = modelIn(await proxy.next((update) => modelIn(update, 'multi') !== undefined), 'multi');
    expect(alone!.deployments).toEqual([{
      name: 'primary',
      upstream: { providerKind: 'openai_compatible', baseUrl: 'https://public.example.test/v1', model: 'vendor-primary', apiKey: primaryCredential },
      allowPrivateNetwork: false, priority: 2, weight: 5,
      providerInputCostMicrosPerMtok: 100n, providerOutputCostMicrosPerMtok: 200n, providerCachedInputCostMicrosPerMtok: 100n,
      providerCacheWrite5mCostMicrosPerMtok: 100n, providerCacheWrite1hCostMicrosPerMtok: 100n, providerReasoningCostMicrosPerMtok: undefined,
      providerAudioInputCostMicrosPerMtok: 100n, providerImageInputCostMicrosPerMtok: 100n,
    }]);

    const eu = await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'eu', {}, {
      priority: 2, weight: 3, provider_input_cost_micros_per_mtok: '300', provider_output_cost_micros_per_mtok: '400', provider_reasoning_cost_micros_per_mtok: '500',
    }));
    expect(eu.status, eu.text).toBe(201);
    // The write returns once the connected proxy acknowledged it: the delta is already there.
    expect(eu.headers.get('x-config-propagation')).toBeNull();
    const withEu = modelIn(await proxy.next((update) => namesOf(modelIn(update, 'multi'))?.includes('eu') === true), 'multi')!;
    expect(withEu.deployments[1]).toEqual({
      name: 'eu',
      upstream: { providerKind: 'openai_compatible', baseUrl: 'https://public.example.test/eu', model: 'vendor-eu', apiKey: euCredential },
      allowPrivateNetwork: false, priority: 2, weight: 3,
      providerInputCostMicrosPerMtok: 300n, providerOutputCostMicrosPerMtok: 400n, providerCachedInputCostMicrosPerMtok: 300n,
      providerCacheWrite5mCostMicrosPerMtok: 300n, providerCacheWrite1hCostMicrosPerMtok: 300n, providerReasoningCostMicrosPerMtok: 500n,
      providerAudioInputCostMicrosPerMtok: 300n, providerImageInputCostMicrosPerMtok: 300n,
    });
    expect((await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'backup', { api_key: usCredential }, { priority: 7 }))).status).toBe(201);
    expect((await admin.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'asia', {}, { priority: 2 }))).status).toBe(201);
    const ordered = await proxy.next((update) => namesOf(modelIn(update, 'multi'))?.length === 4);
    // Primary first whatever its priority; then by priority, then name.
    expect(namesOf(modelIn(ordered, 'multi'))).toEqual(['primary', 'asia', 'eu', 'backup']);

    // A change of the model's own priority and of a deployment's reaches the proxy too.
    expect((await admin.request('PATCH', '/admin/v1/gateway-models/multi', { upstream: { priority: 9 } })).status).toBe(200);
    const reprioritised = modelIn(await proxy.next((update) => modelIn(update, 'multi')?.deployments[0]?.priority === 9), 'multi')!;
    expect(namesOf(reprioritised)).toEqual(['primary', 'asia', 'eu', 'backup']);
    expect((await admin.request('PATCH', `/admin/v1/upstream-deployments/${eu.json.id}`, { priority: 0, upstream: { api_key: `${euCredential}-new` } })).status).toBe(200);
    // (proxy.next also looks at updates already received: each predicate names what is new.)
    const moved = modelIn(await proxy.next((update) => modelIn(update, 'multi')?.deployments[1]?.upstream?.apiKey === `${euCredential}-new`), 'multi')!;
    expect(namesOf(moved)).toEqual(['primary', 'eu', 'asia', 'backup']);
    expect(moved.deployments[1]!.upstream!.apiKey).toBe(`${euCredential}-new`);
    expect((await admin.request('DELETE', `/admin/v1/upstream-deployments/${eu.json.id}`)).status).toBe(200);
    const dropped = await proxy.next((update) => namesOf(modelIn(update, 'multi'))?.join() === 'primary,asia,backup');
    expect(namesOf(modelIn(dropped, 'multi'))).toEqual(['primary', 'asia', 'backup']);
    expect(dropped.full).toBe(false);

    // A proxy connecting now gets the same list in its full snapshot.
    const late = proxyOf(admin, 'proxy-late');
    const snapshot = await late.next((update) => update.full);
    expect(namesOf(modelIn(snapshot, 'multi'))).toEqual(['primary', 'asia', 'backup']);
    expect(modelIn(snapshot, 'multi')!.deployments[2]!.upstream!.apiKey).toBe(usCredential);
  });

  itPg('are re-checked when the admin starts: a refused one is left out of its model\'s list (logged, never its credential) until its URL is fixed', async () => {
    const databaseUrl = await freshDatabase();
    const encryptionKey = randomBytes(32).toString('base64');
    const lenient = await startAdmin(databaseUrl, { allowPrivate: true, encryptionKey });
    await createModel(lenient, 'multi');
    const local = await lenient.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'local', { base_url: 'http://127.0.0.1:9/v1' }));
    expect(local.status, local.text).toBe(201);
    const moving = await lenient.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'moving', { base_url: 'https://moving.example.test/v1' }));
    expect(moving.status, moving.text).toBe(201);
    const flagged = await lenient.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'flagged', { base_url: 'http://10.0.0.7/v1', allow_private_network: true }));
    expect(flagged.status, flagged.text).toBe(201);
    const lenientProxy = proxyOf(lenient, 'proxy-lenient');
    const before = modelIn(await lenientProxy.next((update) => update.full), 'multi')!;
    expect(before.deployments.map((deployment) => [deployment.name, deployment.allowPrivateNetwork]))
      .toEqual([['primary', true], ['flagged', true], ['local', true], ['moving', true]]);
    lenientProxy.close();
    await lenient.close();

    dns.set('moving.example.test', ['10.9.8.7']);
    const logs = captureLogs();
    const strict = await startAdmin(databaseUrl, { token: lenient.token, encryptionKey, logger: logs.logger });
    const proxy = proxyOf(strict, 'proxy-strict');
    const served = modelIn(await proxy.next((update) => update.full), 'multi')!;
    // The model stays served with the deployments that pass, each with its exception as computed.
    expect(served.deployments.map((deployment) => [deployment.name, deployment.allowPrivateNetwork])).toEqual([['primary', false], ['flagged', true]]);
    const errors = logs.text().split('\n').filter((line) => line.includes('"level":50'));
    for (const name of ['local', 'moving']) expect(errors.some((line) => line.includes(`"deployment":"${name}"`))).toBe(true);
    expect(logs.text()).not.toContain(euCredential);

    // A change that keeps the refused URL keeps it out; a new URL that passes serves it again.
    expect((await strict.request('PATCH', `/admin/v1/upstream-deployments/${moving.json.id}`, { weight: 4 })).status).toBe(200);
    const still = modelIn(await proxy.next((update) => !update.full && modelIn(update, 'multi') !== undefined), 'multi')!;
    expect(namesOf(still)).toEqual(['primary', 'flagged']);
    const fixed = await strict.request('PATCH', `/admin/v1/upstream-deployments/${moving.json.id}`, { upstream: { base_url: 'https://public.example.test/moved' } });
    expect(fixed.status, fixed.text).toBe(200);
    const back = modelIn(await proxy.next((update) => namesOf(modelIn(update, 'multi'))?.includes('moving') === true), 'multi')!;
    expect(namesOf(back)).toEqual(['primary', 'flagged', 'moving']);
    dns.set('moving.example.test', ['8.8.4.4']);
  });

  itPg('have their credentials re-sealed by reencrypt, and still reach proxies under the new key', async () => {
    const databaseUrl = await freshDatabase();
    const keyA = randomBytes(32).toString('base64');
    const keyB = randomBytes(32).toString('base64');
    const first = await startAdmin(databaseUrl, { encryptionKey: keyA });
    await createModel(first, 'multi');
    expect((await first.request('POST', '/admin/v1/upstream-deployments', deploymentBody('multi', 'eu'))).status).toBe(201);
    await first.close();

    const db = await openDatabase({ url: databaseUrl, schema: 'admin', poolSize: 2 });
    try {
      const report = await reencryptSealedValues(db, createCredentialCipher(keyB, [keyA]), { checkOnly: false });
      expect(report.columns.find((column) => column.table === 'upstream_deployments')).toMatchObject({ seen: 1, resealed: 1 });
      const { rows } = await db.query<{ value: string }>('SELECT upstream_api_key_encrypted AS value FROM upstream_deployments');
      expect(rows[0]!.value.startsWith(`v2:${createCredentialCipher(keyB).currentKeyId}:`)).toBe(true);
    } finally {
      await db.close();
    }
    const second = await startAdmin(databaseUrl, { encryptionKey: keyB, token: first.token });
    const snapshot = await proxyOf(second, 'proxy-rotated').next((update) => update.full);
    expect(modelIn(snapshot, 'multi')!.deployments.map((deployment) => deployment.upstream!.apiKey)).toEqual([primaryCredential, euCredential]);
  });
});
