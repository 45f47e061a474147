/**
 * Model aliases on a running proxy (docs/model-aliases.md): platform and organisation aliases
 * arrive by config-stream deltas and take effect on every surface (chat, Responses, Messages,
 * embeddings); the resolved slug is what is allowed, priced, reserved, settled and shown; a name
 * that is neither slug nor alias answers exactly the 404 it always did; /v1/models lists slugs only.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectedUsage, gatewayModel, lastSettleOf, startProxyWorld, stateOf, tenant, trafficOf, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

const upstreamCredential = 'sk-upstream-credential-123';
/** May use every model. */
const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'claude', 'embed'] });
/** May use 'chat' only. */
const narrow = tenant('narrow', { allowedGatewayModelSlugs: ['chat'] });

/** What the proxy answered before aliases existed for a name no model has: the exact bytes. */
function missingModelBody(name: string): string {
  return JSON.stringify({
    error: { message: `The model '${name}' does not exist or you do not have access to it.`, type: 'invalid_request_error', param: 'model', code: 'model_not_found' },
  });
}

let world: ProxyWorld;
let proxy: TestProxy;

/** Pushes a delta and waits until the proxy has applied it. */
async function push(delta: Parameters<ProxyWorld['admin']['pushDelta']>[0]): Promise<void> {
  const version = world.admin.pushDelta(delta);
  await waitFor(() => world.admin.acks.some((ack) => ack.proxyId === proxy.proxyId && ack.error === '' && ack.appliedVersion >= version), 5000, `ack of ${version}`);
}

async function post(path: string, apiKey: string, body: unknown): Promise<{ status: number; text: string; json: any }> {
  const response = await fetch(`${proxy.baseUrl}${path}`, {
    method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: response.status, text, json };
}

/** The traffic so far, once every Reserve made has settled (a Settle lands just after its response). */
async function quietTraffic() {
  await waitFor(() => world.ledger.calls.settle.length + world.ledger.calls.release.length >= world.ledger.calls.reserve.length, 5000, 'settles');
  return trafficOf(world);
}

const hello = [{ role: 'user' as const, content: 'hi [[fake:reply_words=3]]' }];

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme, narrow], [
    gatewayModel('chat', baseUrl),
    gatewayModel('claude', baseUrl, { upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-upstream-name', apiKey: upstreamCredential } }),
    gatewayModel('embed', baseUrl, { kind: 'embedding', outputPriceMicrosPerMtok: 0n, providerOutputCostMicrosPerMtok: 0n }),
  ]), { heartbeatIntervalMs: 100 });
  world.ledger.credit('acme', 100_000_000n);
  world.ledger.credit('narrow', 100_000_000n);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  await push({
    platformModelAliases: {
      'claude-sonnet-4-5-20250929': 'claude', 'gpt-5-codex': 'chat', 'text-embedding-3-small': 'embed', 'claude-opus-4-1-20250805': 'claude',
    },
  });
});
afterAll(async () => { await world?.close(); });

describe('model aliases on a running proxy', () => {
  it('serves a platform alias on chat completions as its slug: allowed, reserved, settled, priced and shown as the slug', async () => {
    const client = world.client(acme.apiKey, proxy);
    const completion = await client.chat.completions.create({ model: 'gpt-5-codex', messages: hello });
    expect(completion.model).toBe('chat');
    expect(completion.choices[0]!.message.content).toBe('w1 w2 w3');
    expect(world.ledger.calls.reserve.at(-1)!.modelSlug).toBe('chat');
    const settle = await lastSettleOf(world);
    expect(settle.modelSlug).toBe('chat');
    const usage = expectedUsage(completion.usage!.prompt_tokens, 3);
    expect(String(settle.costMicros)).toBe(usage.cost_micros);
    expect((completion.usage as unknown as { cost_micros: string }).cost_micros).toBe(usage.cost_micros);
    // The upstream was asked for the slug's upstream model, never the alias.
    expect(world.upstream.requests.at(-1)!.body).toMatchObject({ model: 'chat-upstream-name' });
  });

  it('serves a platform alias on the Responses, Messages and embeddings surfaces', async () => {
    const responses = await post('/responses', acme.apiKey, { model: 'gpt-5-codex', input: 'hi [[fake:reply_words=2]]' });
    expect(responses.status, responses.text).toBe(200);
    expect(responses.json.model).toBe('chat');

    const messages = await post('/messages', acme.apiKey, {
      model: 'claude-sonnet-4-5-20250929', max_tokens: 32, messages: [{ role: 'user', content: 'hi [[fake:reply_words=2]]' }],
    });
    expect(messages.status, messages.text).toBe(200);
    expect(messages.json.model).toBe('claude');
    expect((await lastSettleOf(world)).modelSlug).toBe('claude');
    expect(world.upstream.requests.at(-1)!.body).toMatchObject({ model: 'claude-upstream-name' });

    const embeddings = await post('/embeddings', acme.apiKey, { model: 'text-embedding-3-small', input: 'four words of text' });
    expect(embeddings.status, embeddings.text).toBe(200);
    expect(embeddings.json.model).toBe('embed');
  });

  it('answers a name that is neither slug nor alias with exactly the 404 it always did, before any Reserve', async () => {
    const before = await quietTraffic();
    const unknown = await post('/chat/completions', acme.apiKey, { model: 'claude-haiku-9', messages: hello });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe(missingModelBody('claude-haiku-9'));
    expect(trafficOf(world)).toEqual(before);
  });

  it('applies the allowed-models rule to the resolved slug: an alias of a model the organisation may not use is that same 404', async () => {
    const before = await quietTraffic();
    const refused = await post('/chat/completions', narrow.apiKey, { model: 'claude-sonnet-4-5-20250929', messages: hello });
    expect(refused.status).toBe(404);
    expect(refused.text).toBe(missingModelBody('claude-sonnet-4-5-20250929'));
    expect(trafficOf(world)).toEqual(before);
    // The same organisation reaches an alias of a model it may use.
    expect((await post('/chat/completions', narrow.apiKey, { model: 'gpt-5-codex', messages: hello })).status).toBe(200);
  });

  it('refuses an alias of a chat model on the embeddings surface as the slug would be refused (400 naming model)', async () => {
    const wrongKind = await post('/embeddings', acme.apiKey, { model: 'gpt-5-codex', input: 'x' });
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.json.error).toMatchObject({ param: 'model' });
    expect(wrongKind.json.error.message).toContain("'chat'");
  });

  it('lets an organisation\'s alias override the platform\'s, for that organisation only, and follows deltas that change and remove them', async () => {
    await push({ organisations: [{ ...acme.organisation, modelAliases: { 'claude-sonnet-4-5-20250929': 'chat' } }] });
    const overridden = await post('/messages', acme.apiKey, {
      model: 'claude-sonnet-4-5-20250929', max_tokens: 32, messages: [{ role: 'user', content: 'hi [[fake:reply_words=1]]' }],
    });
    expect(overridden.status, overridden.text).toBe(200);
    expect(overridden.json.model).toBe('chat');
    // narrow has no override: the platform's alias (to a model it may not use) still applies.
    expect((await post('/chat/completions', narrow.apiKey, { model: 'claude-sonnet-4-5-20250929', messages: hello })).status).toBe(404);

    // The organisation drops its alias: the platform's applies again.
    await push({ organisations: [acme.organisation] });
    expect((await post('/chat/completions', acme.apiKey, { model: 'claude-sonnet-4-5-20250929', messages: hello })).json.model).toBe('claude');

    // A retargeted platform alias, then a removed one.
    await push({ platformModelAliases: { 'claude-opus-4-1-20250805': 'chat' } });
    expect((await post('/chat/completions', acme.apiKey, { model: 'claude-opus-4-1-20250805', messages: hello })).json.model).toBe('chat');
    await push({ removedPlatformModelAliases: ['claude-opus-4-1-20250805'] });
    const gone = await post('/chat/completions', acme.apiKey, { model: 'claude-opus-4-1-20250805', messages: hello });
    expect(gone.status).toBe(404);
    expect(gone.text).toBe(missingModelBody('claude-opus-4-1-20250805'));
  });

  it('keeps /v1/models to slugs, and answers an alias there as an unknown model', async () => {
    const client = world.client(acme.apiKey, proxy);
    const listed = [];
    for await (const model of client.models.list()) listed.push(model.id);
    expect(listed).toEqual(['chat', 'claude', 'embed']);
    const error = await client.models.retrieve('gpt-5-codex').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('streams through an alias with the slug in every chunk', async () => {
    const client = world.client(acme.apiKey, proxy);
    const stream = await client.chat.completions.create({ model: 'gpt-5-codex', messages: hello, stream: true, stream_options: { include_usage: true } });
    const models = new Set<string>();
    for await (const chunk of stream) models.add(chunk.model);
    expect([...models]).toEqual(['chat']);
  });
});
