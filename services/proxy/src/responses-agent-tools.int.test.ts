/**
 * The Responses surface's tools beyond plain functions, as Codex CLI sends them (custom/freeform
 * tools, namespace tools, client_metadata), through a real proxy and the official `openai` client:
 * the call reaches the upstream as a chat function, comes back as the item the client declared,
 * its earlier call and output go up again with the upstream's own id, and the money is exact.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerV1 } from '@gateway/contracts';
import { fakePromptTokens, leakMarkers } from '@gateway/fake-upstream';
import {
  expectedCostMicros, gatewayModel, lastSettleOf, startProxyWorld, stateOf, tenant, testPrices, trafficOf, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'claude'] });
// The credential gatewayModel gives every model by default; the Anthropic-backed one is given it too.
const upstreamCredential = 'sk-upstream-credential-123';

/** The cost of a usage at the test prices, µ₹, written out independently of the code under test. */
function cost(promptTokens: number, completionTokens: number): bigint {
  return expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok);
}

/** A freeform tool as Codex declares its apply_patch (a Lark grammar). */
const applyPatch = {
  type: 'custom' as const, name: 'apply_patch', description: 'Edits files. This is a FREEFORM tool.',
  format: { type: 'grammar' as const, syntax: 'lark' as const, definition: 'start: "*** Begin Patch" LF hunk+ "*** End Patch"' },
};
/** A namespace as Codex declares its sub-agent tools. */
const agents = {
  type: 'namespace' as const, name: 'multi_agent_v1', description: 'Tools for sub-agents.',
  tools: [{ type: 'function' as const, name: 'close_agent', description: 'Close an agent.', strict: false, parameters: { type: 'object', properties: { id: { type: 'string' } } } }],
};
const patch = '*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n';

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme], [
    gatewayModel('chat', baseUrl),
    gatewayModel('claude', baseUrl, { upstream: { providerKind: 'anthropic', baseUrl, model: 'claude-upstream-name', apiKey: upstreamCredential } }),
  ]), { requiredApiKey: upstreamCredential });
  world.ledger.credit('acme', 100_000_000n);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => { await world?.close(); });

describe('custom (freeform) tools', () => {
  it('streams the call as a custom_tool_call with its input, takes it back with its output, the upstream seeing a function of one input with its own id, and settles the priced usage', async () => {
    await proxy.idle();
    const before = world.ledger.account('acme')!;
    const ask = `Add a file [[fake:tool_call=apply_patch]] [[fake:tool_arg=input:${patch}]]`;
    const stream = client.responses.stream({ model: 'chat', input: ask, tools: [applyPatch], client_metadata: { session_id: 'sess-secret-1' } } as never);
    const types: string[] = [];
    let streamedInput = '';
    stream.on('event', (event) => {
      types.push(event.type);
      if (event.type === 'response.custom_tool_call_input.delta') streamedInput += event.delta;
    });
    const final = await stream.finalResponse();
    await proxy.idle();

    expect(types.slice(2)).toEqual([
      'response.output_item.added', 'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(streamedInput).toBe(patch);
    const call = final.output[0] as OpenAI.Responses.ResponseCustomToolCall;
    expect(call).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: patch, status: 'completed' });
    expect(call.id).toMatch(/^ctc_[0-9a-f]{32}_0$/);
    expect(call.call_id).toMatch(/^call_/);
    expect(final.tools).toEqual([applyPatch]);

    // Upstream: a function of one string input, its grammar in its description; client_metadata nowhere.
    const firstSeen = world.upstream.requests.at(-1)!.body as Record<string, any>;
    expect(firstSeen.tools).toEqual([{ type: 'function', function: {
      name: 'apply_patch', description: `${applyPatch.description}\n\nThe input is plain text (not JSON) that this Lark grammar accepts:\n${applyPatch.format.definition}`,
      parameters: { type: 'object', properties: { input: { type: 'string', description: 'The tool\'s whole input, as free text (not JSON-encoded).' } }, required: ['input'], additionalProperties: false },
    } }]);
    expect(JSON.stringify(world.upstream.requests.at(-1)!)).not.toContain('sess-secret-1');

    // Money: the fake's usage (its prompt count; the arguments' length / 8), priced, is the Settle and the usage shown.
    const argumentsText = JSON.stringify({ input: patch });
    const expected = { input: fakePromptTokens(firstSeen.messages), output: Math.ceil(argumentsText.length / 8) };
    const settle = await lastSettleOf(world);
    expect(settle).toMatchObject({
      inputTokens: BigInt(expected.input), outputTokens: BigInt(expected.output), costMicros: cost(expected.input, expected.output),
      usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
    });
    expect((final.usage as unknown as { cost_micros: string }).cost_micros).toBe(String(settle.costMicros));
    expect(world.ledger.account('acme')).toEqual({
      ...before, debitedMicros: before.debitedMicros + settle.costMicros, availableMicros: before.availableMicros - settle.costMicros,
    });

    // The next turn sends the call and its output back; the upstream gets its own id on both.
    const vendorId = `${leakMarkers.toolCallIdPrefix}${world.upstream.requests.length}`;
    const second = await client.responses.create({
      model: 'chat', tools: [applyPatch],
      input: [
        { role: 'user', content: ask },
        { type: 'custom_tool_call', call_id: call.call_id, name: call.name, input: call.input },
        { type: 'custom_tool_call_output', call_id: call.call_id, output: 'Success. Updated the following files:\nA a.txt' },
      ],
    });
    expect(second.status).toBe('completed');
    expect((world.upstream.requests.at(-1)!.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: ask },
      { role: 'assistant', content: null, tool_calls: [{ id: vendorId, type: 'function', function: { name: 'apply_patch', arguments: argumentsText } }] },
      { role: 'tool', tool_call_id: vendorId, content: 'Success. Updated the following files:\nA a.txt' },
    ]);
  });
});

describe('namespace tools', () => {
  it('on an Anthropic-backed model: the namespace\'s function is <namespace>__<name> upstream, and its call comes back under its own name with its namespace', async () => {
    const ask = 'Close it [[fake:tool_call=multi_agent_v1__close_agent]] [[fake:tool_arg=id:a1]]';
    const first = await client.responses.create({ model: 'claude', input: ask, tools: [agents] } as never) as OpenAI.Responses.Response;
    const call = first.output[0] as OpenAI.Responses.ResponseFunctionToolCall & { namespace?: string };
    expect(call).toMatchObject({ type: 'function_call', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '{"id":"a1"}' });
    const firstSeen = world.upstream.requests.at(-1)!.body as Record<string, any>;
    // The namespace's description comes first in its function's: chat has no namespace to carry it.
    expect(firstSeen.tools).toEqual([{ name: 'multi_agent_v1__close_agent', description: '(multi_agent_v1: Tools for sub-agents.)\n\nClose an agent.', input_schema: agents.tools[0]!.parameters }]);

    const vendorId = `${leakMarkers.toolUseIdPrefix}${world.upstream.requests.length}`;
    await client.responses.create({
      model: 'claude', tools: [agents],
      input: [
        { role: 'user', content: ask },
        { type: 'function_call', call_id: call.call_id, name: 'close_agent', namespace: 'multi_agent_v1', arguments: call.arguments },
        { type: 'function_call_output', call_id: call.call_id, output: 'closed' },
      ],
    } as never);
    expect((world.upstream.requests.at(-1)!.body as { messages: unknown[] }).messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: ask }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: vendorId, name: 'multi_agent_v1__close_agent', input: { id: 'a1' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: vendorId, content: 'closed' }] },
    ]);
  });
});

describe('hosted tools', () => {
  it('web_search (Codex sends it unless turned off) is a 400 naming the tool, before any Reserve or upstream call', async () => {
    await proxy.idle();
    const before = trafficOf(world);
    const response = await fetch(`${proxy.baseUrl}/responses`, {
      method: 'POST', headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', input: 'x', tools: [applyPatch, agents, { type: 'web_search', external_web_access: false }] }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 'invalid_request', param: 'tools[2].type', message: expect.stringContaining('web_search = "disabled"') } });
    expect(trafficOf(world)).toEqual(before);
  });
});
