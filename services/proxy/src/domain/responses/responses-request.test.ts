import { GatewayError } from '@gateway/errors';
import { describe, expect, it } from 'vitest';
import { parseResponsesRequest } from './responses-request.ts';

const limits = { maxMessageChars: 1000 };

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

describe('parseResponsesRequest: the chat form', () => {
  it('turns instructions into a leading system message and a string input into one user message', () => {
    const { chat, echoed } = parse({ instructions: 'Be brief.', input: 'Hello', max_output_tokens: 20, stream: true });
    expect(chat).toEqual({
      model: 'chat', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }],
      maxTokens: 20, stream: true, includeUsage: false, params: {},
    });
    expect(echoed).toEqual({
      instructions: 'Be brief.', max_output_tokens: 20, metadata: {}, parallel_tool_calls: true, temperature: null, top_p: null,
      text: { format: { type: 'text' } }, tool_choice: 'auto', tools: [], truncation: 'disabled', store: false, background: false,
      previous_response_id: null, reasoning: { effort: null, summary: null }, max_tool_calls: null,
    });
  });

  it('translates message items, content parts, function calls (merged into one assistant turn) and their outputs; reasoning items are left out', () => {
    const { chat } = parse({
      input: [
        { role: 'developer', content: 'Use tools.' },
        { type: 'message', role: 'user', content: [
          { type: 'input_text', text: 'What is this?' },
          { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
          { type: 'input_image', image_url: 'https://example.com/a.png' },
        ] },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
        { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'look', arguments: '{"q":1}', status: 'completed' },
        { type: 'function_call', call_id: 'call_b', name: 'look', arguments: '{"q":2}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'one' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: 'two' }] },
        { type: 'function_call', call_id: 'call_c', name: 'look', arguments: '{}' },
        { type: 'function_call_output', call_id: 'call_c', output: 'three' },
      ],
    });
    expect(chat.messages).toEqual([
      { role: 'developer', content: 'Use tools.' },
      { role: 'user', content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
        { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      ] },
      { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }], tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'look', arguments: '{"q":1}' } },
        { id: 'call_b', type: 'function', function: { name: 'look', arguments: '{"q":2}' } },
      ] },
      { role: 'tool', tool_call_id: 'call_a', content: 'one' },
      { role: 'tool', tool_call_id: 'call_b', content: [{ type: 'text', text: 'two' }] },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_c', type: 'function', function: { name: 'look', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_c', content: 'three' },
    ]);
  });

  it('maps tools, tool_choice, text.format and the sampling params to chat params; metadata stays out of them', () => {
    const parameters = { type: 'object', properties: {} };
    const { chat, echoed } = parse({
      input: 'x', temperature: 0.2, top_p: 0.9, user: 'u-1', parallel_tool_calls: false, metadata: { a: 'b' }, truncation: 'auto',
      tools: [{ type: 'function', name: 'f', description: 'does f', parameters, strict: true }, { type: 'function', name: 'g', parameters: null, strict: null }],
      tool_choice: { type: 'function', name: 'f' },
      text: { format: { type: 'json_schema', name: 'out', schema: parameters, strict: true }, verbosity: 'medium' },
    });
    expect(chat.params).toEqual({
      temperature: 0.2, top_p: 0.9, user: 'u-1', parallel_tool_calls: false,
      tools: [
        { type: 'function', function: { name: 'f', description: 'does f', parameters, strict: true } },
        { type: 'function', function: { name: 'g' } },
      ],
      tool_choice: { type: 'function', function: { name: 'f' } },
      response_format: { type: 'json_schema', json_schema: { name: 'out', schema: parameters, strict: true } },
    });
    expect(echoed).toMatchObject({
      metadata: { a: 'b' }, temperature: 0.2, top_p: 0.9, user: 'u-1', parallel_tool_calls: false, truncation: 'auto',
      tool_choice: { type: 'function', name: 'f' },
      tools: [
        { type: 'function', name: 'f', description: 'does f', parameters, strict: true },
        { type: 'function', name: 'g', description: null, parameters: null, strict: null },
      ],
      text: { format: { type: 'json_schema', name: 'out', schema: parameters, strict: true } },
    });
    expect(parse({ input: 'x', text: { format: { type: 'json_object' } } }).chat.params.response_format).toEqual({ type: 'json_object' });
  });

  it('serves what clients send by default: store absent, null, true or false, background false, vacuous include entries, stream_options', () => {
    for (const extra of [{}, { store: null }, { store: true }, { store: false }, { background: false }, { include: ['reasoning.encrypted_content'] }, { stream_options: { include_obfuscation: false } }, { reasoning: {} }, { top_logprobs: 0 }]) {
      expect(parse({ input: 'x', ...extra }).echoed.store).toBe(false);
    }
  });

  it('echoes the stored state the route read, and translates a continued response\'s items ahead of the input', () => {
    const prior = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'a' }] }, { id: 'msg_x_0', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'b', annotations: [], logprobs: [] }] }];
    const parsed = parseResponsesRequest({ model: 'm', instructions: 'sys', input: 'c' }, { maxMessageChars: 1000 }, { store: true, previousResponseId: 'resp_1', priorItems: prior });
    expect(parsed.echoed).toMatchObject({ store: true, previous_response_id: 'resp_1' });
    expect(parsed.chat.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'user']);
  });
});

describe('parseResponsesRequest: refusals name the Responses param', () => {
  it.each([
    [{ input: 'x', conversation: { id: 'conv_1' } }, 'conversation'],
    [{ input: 'x', store: 'yes' }, 'store'],
    [{ input: 'x', background: true }, 'background'],
    [{ input: 'x', prompt: { id: 'p' } }, 'prompt'],
    [{ input: 'x', include: ['message.output_text.logprobs'] }, 'include[0]'],
    [{ input: 'x', reasoning: { summary: 'brief' } }, 'reasoning.summary'],
    [{ input: 'x', tools: [{ type: 'code_interpreter' }] }, 'tools[0].type'],
    [{ input: 'x', tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } }, 'tool_choice'],
    [{ input: 'x', text: { format: { type: 'json_schema', name: 'bad name', schema: {} } } }, 'text.format.name'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image' }] }] }, 'input[0].content[0].image_url'],
    [{ input: [{ role: 'assistant', content: [{ type: 'input_image', image_url: 'https://x' }] }] }, 'input[0].content[0].type'],
    [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0]'],
    [{ input: [{ type: 'mcp_call', id: 'mcp_1' }] }, 'input[0].type'],
    [{ input: [{ type: 'mystery' }] }, 'input[0].type'],
    [{ input: ['text'] }, 'input[0]'],
    [{ input: [{ type: 'function_call', call_id: '', name: 'f', arguments: '{}' }] }, 'input[0].call_id'],
  ])('%j → %s', (body, param) => {
    expect(refusal(body).param).toBe(param);
  });

  it('an unresolved item_reference (storing off) or an item with only an id says to send the item in full, and how with the Vercel AI SDK', () => {
    const message = 'Storing responses is turned off for this organisation, so an item_reference has nothing to refer to: send the item in full instead. '
      + 'With the Vercel AI SDK, set providerOptions: { openai: { store: false } } (it then sends earlier assistant text in full), or use the chat model (openai.chat(model)).';
    expect(refusal({ input: [{ role: 'user', content: 'a' }, { type: 'item_reference', id: 'msg_1' }] })).toEqual({ param: 'input[1]', message });
    expect(refusal({ input: [{ id: 'msg_1' }] })).toEqual({ param: 'input[0]', message });
  });

  it('input must be a string or 1 to 2048 items, and says which', () => {
    expect(refusal({ input: [] })).toEqual({ param: 'input', message: 'Invalid input: input must not be empty' });
    expect(refusal({ input: Array.from({ length: 2049 }, () => ({ role: 'user', content: 'x' })) }))
      .toEqual({ param: 'input', message: 'Invalid input: at most 2048 input items are allowed' });
    expect(refusal({ input: 7 })).toEqual({ param: 'input', message: 'Invalid input: input is required and must be a string or an array of items' });
  });

  it('a 400 of the chat form names the item it came from, in the Responses request\'s terms', () => {
    // Over the character limit of one message: the chat form names messages[2], which is input[1] after instructions.
    const long = refusal({ instructions: 'sys', input: [{ role: 'user', content: 'ok' }, { role: 'user', content: 'x'.repeat(1001) }] });
    expect(long).toEqual({ param: 'input[1]', message: 'A message may carry at most 1000 characters of text.' });
  });

  it('translateError maps the chat params of later refusals (the estimate, an adapter) and leaves other errors alone', () => {
    const { translateError } = parse({
      instructions: 'sys',
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'a' }, { type: 'input_image', image_url: 'https://x' }] },
        { role: 'assistant', content: 'calling' },
        { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'f', arguments: 'not json' },
        { type: 'function_call_output', call_id: 'c1', output: 'r1' },
      ],
      tools: [{ type: 'function', name: 'f' }],
    });
    const mapped = (param: string) => {
      const error = translateError(new GatewayError('invalid_request', { param, publicMessage: `Invalid ${param}: no.` })) as GatewayError;
      return { param: error.param, message: error.publicMessage };
    };
    expect(mapped('messages[2].tool_calls[1].function.arguments')).toEqual({ param: 'input[3].arguments', message: 'Invalid input[3].arguments: no.' });
    expect(mapped('messages[2].tool_calls[0].id')).toEqual({ param: 'input[2].call_id', message: 'Invalid input[2].call_id: no.' });
    expect(mapped('messages[1].content[1].image_url.url').param).toBe('input[0].content[1].image_url');
    expect(mapped('messages[1].content[1].image_url.detail').param).toBe('input[0].content[1].detail');
    expect(mapped('messages[3].content').param).toBe('input[4].output');
    expect(mapped('messages[3].tool_call_id').param).toBe('input[4].call_id');
    expect(mapped('messages[0].content').param).toBe('instructions');
    expect(mapped('messages').param).toBe('input');
    expect(mapped('response_format').param).toBe('text.format');
    expect(mapped('response_format.json_schema.schema').param).toBe('text.format.schema');
    expect(mapped('max_tokens').param).toBe('max_output_tokens');
    expect(mapped('tools[0].function.parameters').param).toBe('tools[0].parameters');
    expect(mapped('tool_choice.function.name').param).toBe('tool_choice.name');
    expect(mapped('temperature').param).toBe('temperature');
    const tooLarge = translateError(new GatewayError('request_too_large', { param: 'messages[1].content[1]', publicMessage: 'messages[1].content[1] is too large.' })) as GatewayError;
    expect({ code: tooLarge.code, param: tooLarge.param, message: tooLarge.publicMessage }).toEqual({
      code: 'request_too_large', param: 'input[0].content[1]', message: 'input[0].content[1] is too large.',
    });
    const other = new GatewayError('insufficient_balance');
    expect(translateError(other)).toBe(other);
  });
});
