import { GatewayError } from '@gateway/errors';
import { describe, expect, it } from 'vitest';
import type { StreamChoice } from '../normalized-completion.ts';
import { parseResponsesRequest } from './responses-request.ts';
import { buildResponseBody, responseFrame } from './responses-response.ts';
import { createResponsesStreamRenderer } from './responses-stream-renderer.ts';

const limits = { maxMessageChars: 10_000 };
const objectSchema = { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] };
/** Tools as Codex CLI sends them: a function, a freeform tool, and a namespace of sub-agent functions. */
const codexTools = [
  { type: 'function', name: 'exec_command', description: 'Runs a command.', strict: false, parameters: objectSchema },
  { type: 'custom', name: 'apply_patch', description: 'Edits files. FREEFORM.', format: { type: 'text' } },
  { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents.', tools: [
    { type: 'function', name: 'close_agent', description: 'Close an agent.', strict: false, parameters: { type: 'object', properties: {} } },
  ] },
];

function parse(body: Record<string, unknown>) {
  return parseResponsesRequest({ model: 'chat', ...body }, limits);
}

/** The param and message of the 400 a body gets. */
function refusal(body: Record<string, unknown>): { param: string | null; message: string } {
  try {
    parse(body);
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe('invalid_request');
    return { param: (error as GatewayError).param, message: (error as GatewayError).publicMessage };
  }
  throw new Error('expected a 400');
}

const uuid = '0f0e0d0c-0b0a-4908-8706-050403020100';
const base = '0f0e0d0c0b0a49088706050403020100';

function frameFor(body: Record<string, unknown>) {
  const parsed = parse(body);
  return responseFrame({ requestUuid: uuid, createdAtS: 1_700_000_000, modelSlug: 'chat', echoed: parsed.echoed, toolNames: parsed.toolNames });
}

/** The events of rendered SSE text. */
function events(text: string): Array<Record<string, any>> {
  return text.split('\n\n').filter((frame) => frame !== '').map((frame) => JSON.parse(/^event: [a-z._]+\ndata: (.*)$/s.exec(frame)![1]!) as Record<string, any>);
}

function delta(fields: StreamChoice['delta'], finish: string | null = null): StreamChoice[] {
  return [{ index: 0, delta: fields, logprobs: null, finish_reason: finish }];
}

describe('Responses tools beyond functions (Codex CLI): the request', () => {
  it('translates a custom tool into a function of one string input and a namespace\'s tools into <namespace>__<name> functions; the response echoes them as declared', () => {
    const { chat, echoed, toolNames } = parse({ input: 'x', tools: codexTools, tool_choice: { type: 'custom', name: 'apply_patch' } });
    expect(chat.params.tools).toEqual([
      { type: 'function', function: { name: 'exec_command', description: 'Runs a command.', parameters: objectSchema, strict: false } },
      { type: 'function', function: { name: 'apply_patch', description: 'Edits files. FREEFORM.', parameters: {
        type: 'object', properties: { input: { type: 'string', description: 'The tool\'s whole input, as free text (not JSON-encoded).' } },
        required: ['input'], additionalProperties: false,
      } } },
      { type: 'function', function: { name: 'multi_agent_v1__close_agent', description: '(multi_agent_v1: Sub-agents.)\n\nClose an agent.', parameters: { type: 'object', properties: {} }, strict: false } },
    ]);
    expect(chat.params.tool_choice).toEqual({ type: 'function', function: { name: 'apply_patch' } });
    expect(echoed.tools).toEqual([
      { type: 'function', name: 'exec_command', description: 'Runs a command.', parameters: objectSchema, strict: false },
      { type: 'custom', name: 'apply_patch', description: 'Edits files. FREEFORM.', format: { type: 'text' } },
      { type: 'namespace', name: 'multi_agent_v1', description: 'Sub-agents.', tools: [
        { type: 'function', name: 'close_agent', description: 'Close an agent.', parameters: { type: 'object', properties: {} }, strict: false },
      ] },
    ]);
    expect([...toolNames]).toEqual([
      ['apply_patch', { kind: 'custom', name: 'apply_patch' }],
      ['multi_agent_v1__close_agent', { kind: 'function', name: 'close_agent', namespace: 'multi_agent_v1' }],
    ]);
  });

  it('gives a custom tool\'s grammar to the model in its description (it cannot be enforced on a chat upstream\'s decoding) and echoes it as declared', () => {
    const format = { type: 'grammar', syntax: 'lark', definition: 'start: "*** Begin Patch" LF' };
    const { chat, echoed } = parse({ input: 'x', tools: [{ type: 'custom', name: 'apply_patch', description: 'Edits files.', format }] });
    expect((chat.params.tools as Array<{ function: { description: string } }>)[0]!.function.description)
      .toBe('Edits files.\n\nThe input is plain text (not JSON) that this Lark grammar accepts:\nstart: "*** Begin Patch" LF');
    expect(echoed.tools).toEqual([{ type: 'custom', name: 'apply_patch', description: 'Edits files.', format }]);
  });

  it('turns earlier custom_tool_call items (and namespaced function_calls) into the assistant turn\'s tool calls, and their outputs into tool messages', () => {
    const { chat } = parse({
      tools: codexTools,
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fix it.' }] },
        { type: 'custom_tool_call', id: 'ctc_1', status: 'completed', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch\n' },
        { type: 'function_call', call_id: 'call_c', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '{}' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' },
        { type: 'function_call_output', call_id: 'call_c', output: 'closed' },
      ],
    });
    expect(chat.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [
        { id: 'call_p', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: '*** Begin Patch\n*** End Patch\n' }) } },
        { id: 'call_c', type: 'function', function: { name: 'multi_agent_v1__close_agent', arguments: '{}' } },
      ] },
      { role: 'tool', tool_call_id: 'call_p', content: 'Done!' },
      { role: 'tool', tool_call_id: 'call_c', content: 'closed' },
    ]);
  });

  it('accepts client_metadata and sends it nowhere: the chat form has no trace of it', () => {
    const { chat, echoed } = parse({ input: 'x', client_metadata: { session_id: 's-1', 'x-codex-turn-metadata': '{"workspaces":{}}' } });
    expect(JSON.stringify(chat)).not.toContain('s-1');
    expect(JSON.stringify(echoed)).not.toContain('s-1');
    expect(refusal({ input: 'x', client_metadata: 'nope' }).param).toBe('client_metadata');
  });

  it('refuses, naming the field, what has no faithful translation: hosted tools, an unknown grammar syntax, deferred tools, names the upstream would refuse or that collide', () => {
    expect(refusal({ input: 'x', tools: [...codexTools, { type: 'web_search', external_web_access: false }] })).toMatchObject({
      param: 'tools[3].type', message: expect.stringContaining('web_search = "disabled"'),
    });
    expect(refusal({ input: 'x', tools: [{ type: 'tool_search', execution: 'client', parameters: {} }] }).param).toBe('tools[0].type');
    expect(refusal({ input: 'x', tools: [{ type: 'custom', name: 'apply_patch', format: { type: 'grammar', syntax: 'ebnf', definition: 'x' } }] }).param)
      .toBe('tools[0].format.syntax');
    expect(refusal({ input: 'x', tools: [{ type: 'function', name: 'f', defer_loading: true }] }).param).toBe('tools[0].defer_loading');
    expect(refusal({ input: 'x', tools: [{ type: 'namespace', name: 'n', description: 'd', tools: [{ type: 'web_search' }] }] }).param).toBe('tools[0].tools[0].type');
    expect(refusal({ input: 'x', tools: [{ type: 'namespace', name: 'n'.repeat(40), description: 'd', tools: [{ type: 'function', name: 'f'.repeat(30) }] }] }).param)
      .toBe('tools[0].tools[0].name');
    expect(refusal({ input: 'x', tools: [{ type: 'function', name: 'a__b' }, { type: 'namespace', name: 'a', description: 'd', tools: [{ type: 'function', name: 'b' }] }] }).param)
      .toBe('tools[0].name');
    expect(refusal({ input: 'x', tools: [{ type: 'custom', name: 'p' }, { type: 'custom', name: 'p' }] }).param).toBe('tools[1].name');
    expect(refusal({ input: [{ type: 'custom_tool_call', call_id: 'c', name: 'p' }] }).param).toBe('input[0].input');
  });
});

describe('Responses tools beyond functions (Codex CLI): the response', () => {
  it('a non-streaming body maps a custom tool\'s call back to a custom_tool_call with its input, and a namespace\'s call to a function_call with its namespace', () => {
    const frame = frameFor({ input: 'x', tools: codexTools });
    const response = buildResponseBody(frame, {
      completion: { choices: [{ index: 0, content: null, refusal: null, logprobs: null, finishReason: 'tool_calls', toolCalls: [
        { id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: JSON.stringify({ input: 'patch text' }) } },
        { id: 'call_2', type: 'function', function: { name: 'multi_agent_v1__close_agent', arguments: '{"id":"a"}' } },
        { id: 'call_3', type: 'function', function: { name: 'exec_command', arguments: '{"cmd":"ls"}' } },
      ] }], usage: undefined },
      usage: { promptTokens: 12, completionTokens: 7 }, costMicros: 99n, createdS: 1_700_000_001,
    });
    expect(response.output).toEqual([
      { id: `ctc_${base}_0`, type: 'custom_tool_call', status: 'completed', call_id: 'call_1', name: 'apply_patch', input: 'patch text' },
      { id: `fc_${base}_1`, type: 'function_call', status: 'completed', call_id: 'call_2', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '{"id":"a"}' },
      { id: `fc_${base}_2`, type: 'function_call', status: 'completed', call_id: 'call_3', name: 'exec_command', arguments: '{"cmd":"ls"}' },
    ]);
  });

  it('a custom call whose arguments are not {"input": text} (cut short) keeps what the model wrote as its input', () => {
    const frame = frameFor({ input: 'x', tools: codexTools });
    const response = buildResponseBody(frame, {
      completion: { choices: [{ index: 0, content: null, refusal: null, logprobs: null, finishReason: 'length', toolCalls: [
        { id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: '{"input": "half' } },
      ] }], usage: undefined },
      usage: { promptTokens: 12, completionTokens: 7 }, costMicros: 99n, createdS: 1_700_000_001,
    });
    expect(response.output).toEqual([{ id: `ctc_${base}_0`, type: 'custom_tool_call', status: 'completed', call_id: 'call_1', name: 'apply_patch', input: '{"input": "half' }]);
  });

  it('a stream announces a custom call as a custom_tool_call item and sends its input whole when the stream ends; a namespaced call streams its arguments', () => {
    const renderer = createResponsesStreamRenderer(frameFor({ input: 'x', tools: codexTools }));
    const text = renderer.start({ promptTokens: 10 })
      + renderer.chunk(delta({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'apply_patch', arguments: '' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 0, function: { arguments: '{"input":"*** Begin' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 0, function: { arguments: ' Patch\\n"}' } }] }))
      + renderer.chunk(delta({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'multi_agent_v1__close_agent', arguments: '{}' } }] }, 'tool_calls'))
      + renderer.close({ ending: 'completed', usage: { promptTokens: 10, completionTokens: 4 }, costMicros: 42n });
    const all = events(text);
    expect(all.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress',
      'response.output_item.added', 'response.output_item.added', 'response.function_call_arguments.delta',
      'response.custom_tool_call_input.delta', 'response.custom_tool_call_input.done', 'response.output_item.done',
      'response.function_call_arguments.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(all[2]!.item).toEqual({ id: `ctc_${base}_0`, type: 'custom_tool_call', status: 'in_progress', call_id: 'call_1', name: 'apply_patch', input: '' });
    expect(all[3]!.item).toEqual({ id: `fc_${base}_1`, type: 'function_call', status: 'in_progress', call_id: 'call_2', name: 'close_agent', namespace: 'multi_agent_v1', arguments: '' });
    expect(all[5]).toMatchObject({ item_id: `ctc_${base}_0`, output_index: 0, delta: '*** Begin Patch\n' });
    expect(all[6]).toMatchObject({ item_id: `ctc_${base}_0`, output_index: 0, input: '*** Begin Patch\n' });
    expect(all[7]!.item).toEqual({ id: `ctc_${base}_0`, type: 'custom_tool_call', status: 'completed', call_id: 'call_1', name: 'apply_patch', input: '*** Begin Patch\n' });
    expect(all[10]!.response.output).toEqual([all[7]!.item, all[9]!.item]);
  });
});
