import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { GatewayError, toHttpError } from '@gateway/errors';
import type { ChatRequest } from './chat-request.ts';
import type { NormalizedCompletion } from './normalized-completion.ts';
import { createToolCallIdCodec, unmappedToolCallIds } from '../test-support/tool-call-id-codecs.ts';
import { concealCompletionToolCallIds, createStreamToolCallIdConcealer, revealToolCallIds } from './tool-call-ids.ts';

const codec = createToolCallIdCodec(randomBytes(32));

function request(messages: ChatRequest['messages']): ChatRequest {
  return { model: 'chat', messages, stream: false, includeUsage: false, maxTokens: undefined, params: {} };
}

function toolRoundTrip(callId: string, resultId = callId): ChatRequest {
  return request([
    { role: 'user', content: 'Weather in Pune?' },
    { role: 'assistant', content: null, tool_calls: [{ id: callId, type: 'function', function: { name: 'wx', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: resultId, content: 'sunny' },
  ]);
}

/** The public error a refused request gets: status and body as the client sees them. */
function refusal(run: () => unknown): { status: number; body: unknown } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    const { status, body } = toHttpError(error);
    return { status, body };
  }
  throw new Error('expected a refusal');
}

describe('revealToolCallIds', () => {
  it('maps the gateway\'s ids in assistant tool_calls and tool messages back to the upstream\'s', () => {
    const gatewayId = codec.conceal('toolu_vendorsecret_1');
    const revealed = revealToolCallIds(toolRoundTrip(gatewayId), codec);
    expect(revealed.messages[1]!.tool_calls![0]!.id).toBe('toolu_vendorsecret_1');
    expect(revealed.messages[2]!.tool_call_id).toBe('toolu_vendorsecret_1');
  });

  it('returns the request itself when it carries no tool-call id', () => {
    const plain = request([{ role: 'user', content: 'hi' }]);
    expect(revealToolCallIds(plain, codec)).toBe(plain);
    expect(revealToolCallIds(plain, unmappedToolCallIds)).toBe(plain);
  });

  it('leaves ids the gateway did not issue as the client sent them', () => {
    const revealed = revealToolCallIds(toolRoundTrip('call_abc123'), codec);
    expect(revealed.messages[1]!.tool_calls![0]!.id).toBe('call_abc123');
    expect(revealed.messages[2]!.tool_call_id).toBe('call_abc123');
  });

  it('refuses an altered id with a 400 naming the tool message\'s tool_call_id', () => {
    const gatewayId = codec.conceal('toolu_vendorsecret_1');
    const altered = `${gatewayId.slice(0, 100)}${gatewayId[100] === 'A' ? 'B' : 'A'}${gatewayId.slice(101)}`;
    expect(refusal(() => revealToolCallIds(toolRoundTrip(gatewayId, altered), codec))).toEqual({
      status: 400,
      body: {
        error: {
          type: 'invalid_request_error', code: 'invalid_request', param: 'messages[2].tool_call_id',
          message: expect.stringMatching(/^Invalid messages\[2\]\.tool_call_id: it is not a tool-call id this gateway issued/),
        },
      },
    });
  });

  it('refuses an id issued under another key with a 400 naming the assistant tool call\'s id', () => {
    const foreignKeyId = createToolCallIdCodec(randomBytes(32)).conceal('call_vendorsecret_2');
    const twoCalls = request([
      { role: 'user', content: 'Two tools' },
      {
        role: 'assistant', content: null, tool_calls: [
          { id: codec.conceal('call_vendorsecret_1'), type: 'function', function: { name: 'a', arguments: '{}' } },
          { id: foreignKeyId, type: 'function', function: { name: 'b', arguments: '{}' } },
        ],
      },
    ]);
    const { body } = refusal(() => revealToolCallIds(twoCalls, codec));
    expect(body).toMatchObject({ error: { param: 'messages[1].tool_calls[1].id', code: 'invalid_request' } });
  });
});

describe('tool messages must answer the preceding assistant message\'s tool calls', () => {
  const call = (id: string, name = 'wx') => ({ id, type: 'function' as const, function: { name, arguments: '{}' } });

  it('passes several tool messages answering several calls in any order, across turns, with text between (as Messages sends it)', () => {
    const [one, two] = [codec.conceal('toolu_vendorsecret_1'), codec.conceal('toolu_vendorsecret_2')];
    const conversation = request([
      { role: 'user', content: 'Weather in Pune and Goa?' },
      { role: 'assistant', content: 'Looking.', tool_calls: [call(one), call(two)] },
      { role: 'tool', tool_call_id: two, content: 'rain' },
      { role: 'tool', tool_call_id: one, content: 'sunny' },
      { role: 'assistant', content: null, tool_calls: [call('call_abc123')] },
      { role: 'user', content: 'here is the result' },
      { role: 'tool', tool_call_id: 'call_abc123', content: '31' },
      // Another sealing of the same upstream id: equal once revealed, as the upstream sees them.
      { role: 'assistant', content: null, tool_calls: [call(codec.conceal('call_vendorsecret_9'))] },
      { role: 'tool', tool_call_id: codec.conceal('call_vendorsecret_9'), content: 'done' },
    ]);
    expect(revealToolCallIds(conversation, codec).messages.map((message) => message.tool_call_id ?? null))
      .toEqual([null, null, 'toolu_vendorsecret_2', 'toolu_vendorsecret_1', null, null, 'call_abc123', null, 'call_vendorsecret_9']);
  });

  it('refuses a tool message whose id is not one of the preceding assistant message\'s calls, naming it', () => {
    expect(refusal(() => revealToolCallIds(toolRoundTrip('call_one', 'call_two'), codec))).toEqual({
      status: 400,
      body: {
        error: {
          type: 'invalid_request_error', code: 'invalid_request', param: 'messages[2].tool_call_id',
          message: 'Invalid messages[2].tool_call_id: it matches no tool_calls id of the preceding assistant message. '
            + 'Each tool message answers one of the tool calls of the assistant message before it, with that call\'s id exactly.',
        },
      },
    });
  });

  it('refuses a tool message answering a call of an earlier turn, or with no assistant message before it', () => {
    const earlier = request([
      { role: 'user', content: 'a' },
      { role: 'assistant', content: null, tool_calls: [call('call_one')] },
      { role: 'tool', tool_call_id: 'call_one', content: 'x' },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: 'again' },
      { role: 'tool', tool_call_id: 'call_one', content: 'x' },
    ]);
    expect(refusal(() => revealToolCallIds(earlier, codec)).body).toMatchObject({ error: { param: 'messages[5].tool_call_id' } });
    const orphan = request([{ role: 'user', content: 'a' }, { role: 'tool', tool_call_id: 'call_one', content: 'x' }]);
    expect(refusal(() => revealToolCallIds(orphan, unmappedToolCallIds)).body).toMatchObject({ error: { param: 'messages[1].tool_call_id' } });
  });
});

describe('concealing answers', () => {
  it('replaces every tool call\'s id of a completion with one that maps back to it', () => {
    const completion = {
      choices: [
        { index: 0, toolCalls: [{ id: 'toolu_vendorsecret_1', type: 'function', function: { name: 'wx', arguments: '{}' } }] },
        { index: 1, toolCalls: [] },
      ],
    } as unknown as NormalizedCompletion;
    const concealed = concealCompletionToolCallIds(completion, codec);
    const id = concealed.choices[0]!.toolCalls[0]!.id;
    expect(id).toMatch(/^call_[A-Za-z0-9_-]{212}$/);
    expect(codec.reveal(id)).toBe('toolu_vendorsecret_1');
    expect(concealed.choices[1]).toBe(completion.choices[1]);
    expect(completion.choices[0]!.toolCalls[0]!.id).toBe('toolu_vendorsecret_1');
  });

  it('replaces the id of a stream chunk\'s tool-call fragment, leaving fragments without one alone', () => {
    const fragments: Array<{ id?: string }> = [{ id: 'call_vendorsecret_3' }, {}];
    createStreamToolCallIdConcealer(codec)([{ delta: { tool_calls: fragments } }, { delta: {} }]);
    expect(codec.reveal(fragments[0]!.id!)).toBe('call_vendorsecret_3');
    expect(fragments[1]).toEqual({});
  });

  it('gives one stream one gateway id per upstream id, however many fragments repeat it (clients merge fragments by id)', () => {
    const conceal = createStreamToolCallIdConcealer(codec);
    const chunks = [
      [{ id: 'call_vendorsecret_4' }],
      [{ id: 'call_vendorsecret_4' }, { id: 'call_vendorsecret_5' }],
      [{ id: 'call_vendorsecret_4' }, {}, { id: 'call_vendorsecret_5' }],
    ].map((fragments: Array<{ id?: string }>) => ({ delta: { tool_calls: fragments } }));
    for (const chunk of chunks) conceal([chunk]);
    const ids = chunks.map((chunk) => chunk.delta.tool_calls.map((fragment) => fragment.id));
    const [four, five] = [ids[0]![0]!, ids[1]![1]!];
    expect(ids).toEqual([[four], [four, five], [four, undefined, five]]);
    expect(four).not.toBe(five);
    expect([codec.reveal(four), codec.reveal(five)]).toEqual(['call_vendorsecret_4', 'call_vendorsecret_5']);
    // Another stream seals afresh: ids are per stream, not a table that grows for the process.
    const other = [{ id: 'call_vendorsecret_4' }];
    createStreamToolCallIdConcealer(codec)([{ delta: { tool_calls: other } }]);
    expect(other[0]!.id).not.toBe(four);
  });
});
