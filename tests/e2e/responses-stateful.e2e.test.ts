/**
 * Stateful Responses through the whole gateway (ledger, admin and proxy as processes over real
 * PostgreSQL, the fake upstream behind, and Redis as the response store when TEST_REDIS_URL is
 * set): `store` (true by default), `previous_response_id`, `item_reference`, GET/DELETE
 * `/v1/responses/{id}` and its `input_items`, with the official `openai` client and the Vercel AI
 * SDK's default provider (which relies on them). Organisation B never reads or continues A's
 * responses; an organisation with storing off gets a 400 naming `store`; a response past its
 * retention is gone. Money: every balance drop is the priced usage of the upstream calls made,
 * to the µ₹, and a refused request moves none.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, jsonSchema, stepCountIs, streamText, tool, type ModelMessage } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakePromptTokens } from '@gateway/fake-upstream';
import { testPostgresUrl, testRedisUrl } from '@gateway/testkit';
import { e2eCostMicros, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const redisUrl = testRedisUrl();

function words(count: number): string {
  return Array.from({ length: count }, (_, i) => `w${i + 1}`).join(' ');
}

/** The `lookup` tool: records each input in `calls` and answers 42. */
function lookupTool(calls: unknown[]) {
  return {
    lookup: tool({
      description: 'Looks a query up',
      inputSchema: jsonSchema<{ query: string }>({ type: 'object', properties: { query: { type: 'string' } }, required: ['query'] }),
      execute: async (input) => { calls.push(input); return { answer: 42 }; },
    }),
  };
}

/** The chat messages an upstream request carried. */
type UpstreamMessages = Array<{ role?: unknown; content?: unknown; tool_calls?: unknown }>;

describe.skipIf(!serverUrl)('stateful Responses end to end', () => {
  let gateway: E2eGateway;
  /** Organisation B: same model, its own key. */
  let orgB: { id: string; client: OpenAI };

  beforeAll(async () => {
    gateway = await startE2eGateway({
      serverUrl: serverUrl!,
      // Redis holds the stored responses when there is one (as in production), shared by two
      // replicas that seal under the admin's key; one proxy with the in-process store otherwise.
      ...(redisUrl === undefined ? {} : { proxies: 2, proxyEnv: { REDIS_URL: redisUrl, PROXY_REDIS_PREFIX: `e2e-rpm-${Date.now()}:`, PROXY_RESPONSE_STORE_PREFIX: `e2e-resp-${Date.now()}:` } }),
    });
    const organisation = await gateway.admin('POST', '/organisations', { name: 'E2E B', rpm_limit: 600, allowed_gateway_models: [gateway.modelSlug] });
    await gateway.admin('POST', `/organisations/${organisation.id}/credits`, { amount_micros: '10000000', reason: 'e2e B' }, { 'idempotency-key': 'e2e-b-credit' });
    const project = await gateway.admin('POST', `/organisations/${organisation.id}/projects`, { name: 'b' });
    orgB = { id: organisation.id as string, client: gateway.client(0, project.api_key as string) };
  }, 120_000);
  afterAll(async () => { await gateway?.close(); });

  /** An organisation's available balance once nothing is held, µ₹. */
  async function available(organisationId = gateway.organisationId): Promise<bigint> {
    const balance = await gateway.settledBalance(organisationId);
    expect(balance.held_micros).toBe('0');
    return BigInt(balance.available_micros as string);
  }

  /** The priced cost of each upstream call since `from`: its prompt as the fake counts it, and the output it reported. */
  function upstreamCostSince(from: number, outputTokens: (index: number) => number): bigint {
    return gateway.upstream.requests.slice(from).reduce((sum, request, index) => {
      const messages = (request.body as { messages: UpstreamMessages }).messages as Parameters<typeof fakePromptTokens>[0];
      return sum + e2eCostMicros(fakePromptTokens(messages), outputTokens(index));
    }, 0n);
  }

  it('the openai client: store by default, GET, input_items, previous_response_id priced on the whole prompt, DELETE', async () => {
    const before = await available();
    const client = gateway.client();
    const from = gateway.upstream.requests.length;

    const firstText = 'Remember the colour blue [[fake:reply_words=3]]';
    const first = await client.responses.create({ model: gateway.modelSlug, instructions: 'Be brief.', input: firstText });
    expect(first).toMatchObject({ status: 'completed', store: true, previous_response_id: null, output_text: words(3), model: gateway.modelSlug });
    const firstInput = fakePromptTokens([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: firstText }]);
    expect(first.usage).toMatchObject({ input_tokens: firstInput, output_tokens: 3, cost_micros: String(e2eCostMicros(firstInput, 3)) });

    // GET answers the stored object as it was returned (from the other replica when there are two:
    // it opens what this one sealed); input_items lists the input with an id.
    const fetched = await gateway.client(gateway.proxyBases.length - 1).responses.retrieve(first.id);
    // (output_text is the client's own convenience field, added to both.)
    expect(JSON.parse(JSON.stringify({ ...fetched, output_text: undefined }))).toEqual(JSON.parse(JSON.stringify({ ...first, output_text: undefined })));
    const items = await client.responses.inputItems.list(first.id);
    expect(items.data).toEqual([{ id: expect.stringMatching(/^msg_[0-9a-f]{32}_i0$/), type: 'message', role: 'user', content: [{ type: 'input_text', text: firstText }] }]);

    // Turn 2 continues turn 1: the upstream gets turn 1's input and output before the new input
    // (turn 1's instructions are not carried over, as OpenAI's are not), and the whole prompt is billed.
    const secondText = 'What colour [[fake:reply_words=2]]';
    const second = await client.responses.create({ model: gateway.modelSlug, previous_response_id: first.id, input: secondText });
    expect(second).toMatchObject({ status: 'completed', store: true, previous_response_id: first.id, output_text: words(2) });
    const sent = (gateway.upstream.requests.at(-1)!.body as { messages: UpstreamMessages }).messages;
    expect(sent).toEqual([
      { role: 'user', content: [{ type: 'text', text: firstText }] },
      { role: 'assistant', content: [{ type: 'text', text: words(3) }] },
      { role: 'user', content: secondText },
    ]);
    const secondInput = fakePromptTokens([{ role: 'user', content: firstText }, { role: 'assistant', content: words(3) }, { role: 'user', content: secondText }]);
    expect(second.usage).toMatchObject({ input_tokens: secondInput, output_tokens: 2, cost_micros: String(e2eCostMicros(secondInput, 2)) });

    // Turn 3 continues turn 2, so it carries both earlier turns (streamed this time).
    const thirdText = 'And again [[fake:reply_words=4]]';
    const stream = await client.responses.create({ model: gateway.modelSlug, previous_response_id: second.id, input: thirdText, stream: true });
    let third: OpenAI.Responses.Response | undefined;
    for await (const event of stream) if (event.type === 'response.completed') third = event.response;
    expect(third).toMatchObject({ store: true, previous_response_id: second.id, status: 'completed' });
    const thirdInput = secondInput + fakePromptTokens([{ role: 'assistant', content: words(2) }, { role: 'user', content: thirdText }]);
    expect(third!.usage).toMatchObject({ input_tokens: thirdInput, output_tokens: 4 });
    expect((await client.responses.retrieve(third!.id)).output).toEqual(third!.output);

    const expected = e2eCostMicros(firstInput, 3) + e2eCostMicros(secondInput, 2) + e2eCostMicros(thirdInput, 4);
    expect(upstreamCostSince(from, (index) => [3, 2, 4][index]!)).toBe(expected);
    expect(before - await available()).toBe(expected);
    console.log(`stateful: 3 turns billed ${expected} µ₹ (inputs ${firstInput}, ${secondInput}, ${thirdInput} tokens)`);

    // DELETE: then GET is a 404 and a continuation of it is a 400 before any Reserve.
    expect(await client.responses.delete(first.id)).toEqual({ id: first.id, object: 'response', deleted: true });
    const gone = await client.responses.retrieve(first.id).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await client.responses.delete(first.id).catch((e: unknown) => e))).toBeInstanceOf(OpenAI.NotFoundError);
    const upstreamBefore = gateway.upstream.requests.length;
    const balanceBefore = await available();
    const orphan = await client.responses.create({ model: gateway.modelSlug, previous_response_id: first.id, input: 'x' }).catch((e: unknown) => e);
    expect(orphan).toBeInstanceOf(OpenAI.BadRequestError);
    expect((orphan as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'previous_response_id' });
    expect(gateway.upstream.requests.length).toBe(upstreamBefore);
    expect(await available()).toBe(balanceBefore);
  });

  it('store: false is served and not kept; the raw DELETE answer is OpenAI\'s', async () => {
    const client = gateway.client();
    const unstored = await client.responses.create({ model: gateway.modelSlug, input: 'Not kept [[fake:reply_words=1]]', store: false });
    expect(unstored).toMatchObject({ store: false, output_text: words(1) });
    expect(await client.responses.retrieve(unstored.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);

    const kept = await client.responses.create({ model: gateway.modelSlug, input: 'Kept [[fake:reply_words=1]]', store: true });
    const answer = await fetch(`${gateway.proxyBases[0]}/responses/${kept.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${gateway.apiKey}` } });
    expect({ status: answer.status, body: await answer.json() }).toEqual({ status: 200, body: { id: kept.id, object: 'response', deleted: true } });
  });

  it('organisation B cannot read, list, delete, continue or refer to A\'s response: the same answers as for an unknown id, and no money moves', async () => {
    const a = await gateway.client().responses.create({ model: gateway.modelSlug, input: 'Secret of A [[fake:reply_words=2]]' });
    const unknownId = 'resp_00000000-0000-4000-8000-000000000000';
    const answerOf = async (method: string, path: string) => {
      const response = await fetch(`${gateway.proxyBases[0]}${path}`, { method, headers: { authorization: `Bearer ${(orgB.client as unknown as { apiKey: string }).apiKey}` } });
      const body = await response.json() as { error: { message: string } };
      return { status: response.status, body: JSON.parse(JSON.stringify(body).replaceAll(a.id, unknownId)) as unknown };
    };
    for (const [method, suffix] of [['GET', ''], ['GET', '/input_items'], ['DELETE', '']] as const) {
      const ofA = await answerOf(method, `/responses/${a.id}${suffix}`);
      expect(ofA.status).toBe(404);
      expect(ofA).toEqual(await answerOf(method, `/responses/${unknownId}${suffix}`));
    }

    const bBefore = await available(orgB.id);
    const upstreamBefore = gateway.upstream.requests.length;
    const continued = await orgB.client.responses.create({ model: gateway.modelSlug, previous_response_id: a.id, input: 'Tell me' }).catch((e: unknown) => e);
    expect(continued).toBeInstanceOf(OpenAI.BadRequestError);
    expect((continued as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'previous_response_id' });
    const referred = await orgB.client.responses.create({
      model: gateway.modelSlug, input: [{ role: 'user', content: 'Tell me' }, { type: 'item_reference', id: a.output[0]!.id! }],
    }).catch((e: unknown) => e);
    expect(referred).toBeInstanceOf(OpenAI.BadRequestError);
    expect((referred as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'input[1]' });
    expect(gateway.upstream.requests.length).toBe(upstreamBefore);
    expect(await available(orgB.id)).toBe(bBefore);
    // A still reads its own.
    expect((await gateway.client().responses.retrieve(a.id)).id).toBe(a.id);
  });

  it('the Vercel AI SDK\'s default provider: a tool loop whose model writes text first, generateText and streamText, unchanged', async () => {
    const before = await available();
    const openai = createOpenAI({ baseURL: gateway.proxyBases[0]!, apiKey: gateway.apiKey });
    const prompt = 'Look it up [[fake:tool_call=lookup]] [[fake:tool_text=4]]';
    const firstStepOutput = 4 + Math.ceil(JSON.stringify({ query: 'Look it up' }).length / 8);
    const from = gateway.upstream.requests.length;

    const calls: unknown[] = [];
    const generated = await generateText({ model: openai(gateway.modelSlug), prompt, tools: lookupTool(calls), stopWhen: stepCountIs(3), maxRetries: 0 });
    expect(calls).toEqual([{ query: 'Look it up' }]);
    expect(generated.steps).toHaveLength(2);
    expect(generated.steps[0]!.text).toBe(words(4));
    expect(generated.text).toContain('Hello from the demo upstream!');
    // Step 2 referred to step 1's text and call (item_reference); the upstream got them in full
    // (the stored message item's output_text part as a text part), then the tool's result.
    const second = (gateway.upstream.requests.at(-1)!.body as { messages: UpstreamMessages }).messages;
    expect(second.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);
    expect(second[1]).toMatchObject({ content: [{ type: 'text', text: words(4) }], tool_calls: [{ function: { name: 'lookup' } }] });

    const streamed = streamText({ model: openai(gateway.modelSlug), prompt, tools: lookupTool(calls), stopWhen: stepCountIs(3), maxRetries: 0 });
    let text = '';
    for await (const piece of streamed.textStream) text += piece;
    expect(calls).toHaveLength(2);
    expect((await streamed.steps)).toHaveLength(2);
    expect(text).toContain(words(4));
    expect(text).toContain('Hello from the demo upstream!');
    expect((gateway.upstream.requests.at(-1)!.body as { messages: UpstreamMessages }).messages.map((message) => message.role)).toEqual(['user', 'assistant', 'tool']);

    const stepOutputs = [...generated.steps, ...await streamed.steps].map((step) => step.usage.outputTokens!);
    expect(stepOutputs[0]).toBe(firstStepOutput);
    const expected = upstreamCostSince(from, (index) => stepOutputs[index]!);
    expect([...generated.steps, ...await streamed.steps].reduce((sum, step) => sum + e2eCostMicros(step.usage.inputTokens!, step.usage.outputTokens!), 0n)).toBe(expected);
    expect(before - await available()).toBe(expected);
    console.log(`stateful: AI SDK tool loops (4 upstream calls) billed ${expected} µ₹`);
  });

  it('the Vercel AI SDK\'s default provider: multi-turn with response.messages, unchanged', async () => {
    const before = await available();
    const openai = createOpenAI({ baseURL: gateway.proxyBases[0]!, apiKey: gateway.apiKey });
    const from = gateway.upstream.requests.length;
    const firstText = 'First turn [[fake:reply_words=2]]';
    const first = await generateText({ model: openai(gateway.modelSlug), prompt: firstText, maxRetries: 0 });
    const secondText = 'Second turn [[fake:reply_words=3]]';
    const messages: ModelMessage[] = [{ role: 'user', content: firstText }, ...first.response.messages, { role: 'user', content: secondText }];
    const second = await generateText({ model: openai(gateway.modelSlug), messages, maxRetries: 0 });
    expect(second.text).toBe(words(3));
    expect((gateway.upstream.requests.at(-1)!.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: firstText }] }, { role: 'assistant', content: [{ type: 'text', text: words(2) }] },
      { role: 'user', content: [{ type: 'text', text: secondText }] },
    ]);
    const expected = upstreamCostSince(from, (index) => [2, 3][index]!);
    expect(expected).toBe(e2eCostMicros(fakePromptTokens([{ role: 'user', content: firstText }]), 2)
      + e2eCostMicros(fakePromptTokens([{ role: 'user', content: firstText }, { role: 'assistant', content: words(2) }, { role: 'user', content: secondText }]), 3));
    expect(before - await available()).toBe(expected);
    console.log(`stateful: AI SDK multi-turn (2 upstream calls) billed ${expected} µ₹`);
  });

  it('an organisation with storing off: store: true is a 400 naming store, an absent store is served unstored; a short retention expires', async () => {
    const setStorage = (body: unknown) => gateway.admin('PUT', `/organisations/${orgB.id}/response-storage`, body);
    expect(await setStorage({ store_responses: false, response_retention_s: null })).toMatchObject({ store_responses: false, response_retention_s: null });
    const bBefore = await available(orgB.id);
    const refused = await orgB.client.responses.create({ model: gateway.modelSlug, input: 'x', store: true }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'store' });
    expect(await available(orgB.id)).toBe(bBefore);
    const text = 'Unstored [[fake:reply_words=2]]';
    const served = await orgB.client.responses.create({ model: gateway.modelSlug, input: text });
    expect((served as unknown as { store: boolean }).store).toBe(false);
    expect(await orgB.client.responses.retrieve(served.id).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.NotFoundError);
    const unstoredCost = e2eCostMicros(fakePromptTokens([{ role: 'user', content: text }]), 2);
    expect(bBefore - await available(orgB.id)).toBe(unstoredCost);
    console.log(`stateful: storing off, refused store: true billed 0 µ₹, unstored answer billed ${unstoredCost} µ₹`);

    // A retention above the platform's is refused, naming it.
    const tooLong = await gateway.adminRequest('PUT', `/organisations/${orgB.id}/response-storage`, { store_responses: true, response_retention_s: 31_536_000 });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error).toMatchObject({ param: 'response_retention_s' });

    // A 1-second retention: the stored response is readable, then gone (waited for, not slept on).
    expect(await setStorage({ store_responses: true, response_retention_s: 1 })).toMatchObject({ store_responses: true, response_retention_s: 1 });
    const short = await orgB.client.responses.create({ model: gateway.modelSlug, input: 'Brief [[fake:reply_words=1]]' });
    expect((short as unknown as { store: boolean }).store).toBe(true);
    const deadline = Date.now() + 15_000;
    let state: unknown;
    do {
      state = await orgB.client.responses.retrieve(short.id).then(() => 'stored', (e: unknown) => (e instanceof OpenAI.NotFoundError ? 'expired' : e));
    } while (state === 'stored' && Date.now() < deadline && await new Promise((resolve) => setTimeout(resolve, 50, true)));
    expect(state).toBe('expired');
    await setStorage({ store_responses: true, response_retention_s: null });
  });
});
