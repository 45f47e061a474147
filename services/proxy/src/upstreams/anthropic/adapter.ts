import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import { imageDataUrlOf, type CacheControl, type ChatMessage, type ForwardedParam } from '../../domain/chat-request.ts';
import type { UpstreamTarget } from '../../domain/config-snapshot.ts';
import type { NormalizedCompletion, UpstreamAdapter, UpstreamChatRequest, UpstreamRequest } from '../upstream-adapter.ts';
import { anthropicPromptTokens, anthropicTokenClasses } from './token-classes.ts';
import {
  anthropicTools, extendedCacheTtlBeta, hasHourBreakpoint, scopeAnthropicPrompt, systemBlocksOf, systemValueOf, type ChatTool, type SystemBlock,
} from './prompt-cache.ts';
import { answerReasoning, historyReasoningBlocks, reasoningFields } from './reasoning.ts';
import { AnthropicStreamDecoder, finishReasonOf } from './stream-decoder.ts';

/** The Messages API version the adapter speaks. */
const anthropicVersion = '2023-06-01';

/** Params Anthropic's Messages API has no equivalent for: sending one is a 400 naming it. */
const unsupportedParams: readonly ForwardedParam[] = ['logprobs', 'top_logprobs', 'logit_bias', 'seed', 'presence_penalty', 'frequency_penalty'];

type ImageSource = { type: 'base64'; media_type: string; data: string } | { type: 'url'; url: string };

/** A block as Anthropic takes it; `cache_control` is a prompt-cache breakpoint carried from the request. */
type ContentBlock = (
  | { type: 'text'; text: string }
  | { type: 'image'; source: ImageSource }
  | { type: 'tool_use'; id: string; name: string; input: unknown }
  | { type: 'tool_result'; tool_use_id: string; content: string }
) & { cache_control?: CacheControl }
  | Record<string, unknown>;

interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: ContentBlock[];
}

function refuse(param: string, publicMessage: string): GatewayError {
  return new GatewayError('invalid_request', { param, publicMessage });
}

function textOf(content: ChatMessage['content']): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (part.type === 'text' ? part.text : '')).join('');
  return '';
}

/**
 * An image part as an Anthropic image block: a data URL as a base64 source (its media type and
 * payload), any other URL (http(s), checked by checkMediaParts) as a url source. Anthropic's
 * limits (100 images, 5 MB of base64 each) are checked by checkMediaParts for every model alike,
 * so that no refusal tells a client that Anthropic serves the slug.
 */
function imageBlock(url: string): ContentBlock {
  const dataUrl = imageDataUrlOf(url);
  if (dataUrl === undefined) return { type: 'image', source: { type: 'url', url } };
  return { type: 'image', source: { type: 'base64', media_type: dataUrl.mediaType, data: url.slice(dataUrl.base64Start) } };
}

/**
 * A user message's blocks, in the order of its parts: consecutive text parts as one text block,
 * images as image blocks between them. Anthropic's API takes no audio: an audio part is a 400
 * naming it (this runs in buildRequest, before the Reserve).
 */
function userBlocks(content: ChatMessage['content'], index: number): ContentBlock[] {
  if (!Array.isArray(content)) return [{ type: 'text', text: textOf(content) }];
  const blocks: ContentBlock[] = [];
  let text = '';
  content.forEach((part, partIndex) => {
    if (part.type === 'text') {
      text += part.text;
      // A breakpoint ends its text block there, so the cached prefix ends where the client put it.
      if (part.cache_control !== undefined) {
        blocks.push({ type: 'text', text, cache_control: part.cache_control });
        text = '';
      }
      return;
    }
    const param = `messages[${index}].content[${partIndex}]`;
    if (part.type === 'input_audio') throw refuse(param, `This model does not accept audio (${param}).`);
    // Anthropic refuses empty text blocks: text between images is kept only when there is some.
    if (text !== '') blocks.push({ type: 'text', text });
    text = '';
    blocks.push({ ...imageBlock(part.image_url.url), ...(part.cache_control === undefined ? {} : { cache_control: part.cache_control }) });
  });
  if (text !== '' || blocks.length === 0) blocks.push({ type: 'text', text });
  return blocks;
}

/** An assistant message's text as blocks: one block, or one per part when a part carries a breakpoint (kept on its block). */
function assistantTextBlocks(content: ChatMessage['content']): ContentBlock[] {
  if (Array.isArray(content) && content.some((part) => part.cache_control !== undefined)) {
    return content.flatMap((part): ContentBlock[] => (part.type === 'text' && part.text !== ''
      ? [{ type: 'text', text: part.text, ...(part.cache_control === undefined ? {} : { cache_control: part.cache_control }) }]
      : []));
  }
  const text = textOf(content);
  return text === '' ? [] : [{ type: 'text', text }];
}

/** A message's own breakpoint (chat's message-level cache_control) on its last block. */
function withMessageBreakpoint(blocks: ContentBlock[], message: ChatMessage): ContentBlock[] {
  if (message.cache_control === undefined || blocks.length === 0) return blocks;
  return [...blocks.slice(0, -1), { ...blocks.at(-1)!, cache_control: message.cache_control }];
}

/** The OpenAI messages as Anthropic's `system` blocks and alternating user/assistant messages. */
function translateMessages(messages: readonly ChatMessage[]): { system: SystemBlock[]; messages: AnthropicMessage[] } {
  const system: SystemBlock[] = [];
  const translated: AnthropicMessage[] = [];
  const append = (role: AnthropicMessage['role'], blocks: ContentBlock[]) => {
    const last = translated.at(-1);
    // Anthropic wants user and assistant turns to alternate: consecutive turns of one role merge.
    if (last !== undefined && last.role === role) last.content.push(...blocks);
    else translated.push({ role, content: blocks });
  };
  messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(...systemBlocksOf(message));
        break;
      case 'user':
        append('user', withMessageBreakpoint(userBlocks(message.content, index), message));
        break;
      case 'tool':
        append('user', withMessageBreakpoint([{ type: 'tool_result', tool_use_id: message.tool_call_id!, content: textOf(message.content) }], message));
        break;
      case 'assistant': {
        // Thinking blocks first, as Anthropic requires of a turn that carries them.
        const blocks: ContentBlock[] = [...historyReasoningBlocks(message.reasoning), ...assistantTextBlocks(message.content)];
        (message.tool_calls ?? []).forEach((call, callIndex) => {
          let input: unknown;
          try {
            input = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
          } catch {
            input = undefined;
          }
          // Anthropic's tool_use input is an object: anything else (not JSON, or an array, a string, a
          // number) would be refused upstream after the Reserve, so it is refused here, before it.
          if (typeof input !== 'object' || input === null || Array.isArray(input)) {
            throw refuse(`messages[${index}].tool_calls[${callIndex}].function.arguments`, 'Tool call arguments must be a JSON object for this model.');
          }
          blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input, ...(call.cache_control === undefined ? {} : { cache_control: call.cache_control }) });
        });
        if (blocks.length > 0) append('assistant', withMessageBreakpoint(blocks, message));
        break;
      }
    }
  });
  return { system, messages: translated };
}

function toolChoiceOf(choice: unknown, parallel: unknown): Record<string, unknown> | undefined {
  let translated: Record<string, unknown> | undefined;
  if (choice === 'auto') translated = { type: 'auto' };
  else if (choice === 'required') translated = { type: 'any' };
  else if (choice === 'none') translated = { type: 'none' };
  else if (typeof choice === 'object' && choice !== null) translated = { type: 'tool', name: (choice as { function: { name: string } }).function.name };
  if (parallel === false) translated = { ...(translated ?? { type: 'auto' }), disable_parallel_tool_use: true };
  return translated;
}

const anthropicUsageSchema = z.object({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  cache_creation_input_tokens: z.number().int().nonnegative().nullish(),
  cache_read_input_tokens: z.number().int().nonnegative().nullish(),
});

// The allowlist of what an Anthropic answer may contribute: text and tool_use blocks, the stop reason and usage.
const messageSchema = z.object({
  content: z.array(z.union([
    z.object({ type: z.literal('text'), text: z.string() }),
    z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() }),
    z.object({ type: z.string() }),
  ])),
  stop_reason: z.string().nullish(),
});

/**
 * The adapter for Anthropic's Messages API (`provider_kind` `anthropic`), translated both ways:
 * OpenAI messages become `system` plus alternating turns (user images as image blocks in order
 * with the text, tool calls as tool_use blocks, tool results as tool_result blocks), and the
 * answer, streamed or not, becomes an OpenAI completion. Temperature above 1, audio, and params
 * Anthropic has no equivalent for are refused with a 400.
 */
export const anthropicAdapter: UpstreamAdapter = {
  providerKind: 'anthropic',

  buildRequest(target: UpstreamTarget, chat: UpstreamChatRequest): UpstreamRequest {
    const { params } = chat.request;
    for (const param of unsupportedParams) {
      if (params[param] !== undefined) throw refuse(param, `The parameter '${param}' is not supported by this model.`);
    }
    const format = params.response_format as { type: string } | undefined;
    if (format !== undefined && format.type !== 'text') throw refuse('response_format', 'Only the "text" response format is supported by this model.');
    if (typeof params.temperature === 'number' && params.temperature > 1) throw refuse('temperature', 'This model accepts a temperature between 0 and 1.');

    const { system, messages } = translateMessages(chat.request.messages);
    if (messages.length === 0) throw refuse('messages', 'This model needs at least one user or assistant message besides system messages.');
    const body: Record<string, unknown> = { model: target.model, max_tokens: chat.maxTokens, messages };
    // The organisation's marker goes where Anthropic's prefix starts: the first tool, else the system prompt.
    const scoped = scopeAnthropicPrompt(params.tools === undefined ? undefined : anthropicTools(params.tools as ChatTool[]), system, chat.cacheScope);
    const { tools } = scoped;
    const systemValue = systemValueOf(scoped.system);
    if (systemValue !== undefined) body.system = systemValue;
    if (params.temperature !== undefined) body.temperature = params.temperature;
    if (params.top_p !== undefined) body.top_p = params.top_p;
    if (params.stop !== undefined) body.stop_sequences = typeof params.stop === 'string' ? [params.stop] : params.stop;
    if (params.user !== undefined) body.metadata = { user_id: params.user };
    if (tools !== undefined) body.tools = tools;
    const toolChoice = toolChoiceOf(params.tool_choice, params.parallel_tool_calls);
    if (toolChoice !== undefined) body.tool_choice = toolChoice;
    Object.assign(body, reasoningFields(chat.reasoning, chat.request.messages));
    if (chat.request.stream) body.stream = true; // Anthropic always streams its usage

    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: chat.request.stream ? 'text/event-stream' : 'application/json',
      'anthropic-version': anthropicVersion,
    };
    if (target.apiKey !== '') headers['x-api-key'] = target.apiKey;
    if ((chat.request.cacheBreakpoints ?? 0) > 0 && hasHourBreakpoint(chat.request)) headers['anthropic-beta'] = extendedCacheTtlBeta;
    return { path: '/messages', headers, body: JSON.stringify(body) };
  },

  parseResponse(json: unknown): NormalizedCompletion {
    const message = messageSchema.parse(json);
    let content = '';
    const toolCalls: NormalizedCompletion['choices'][number]['toolCalls'] = [];
    for (const block of message.content) {
      if (block.type === 'text' && 'text' in block) content += block.text;
      else if (block.type === 'tool_use' && 'id' in block) {
        toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
      }
    }
    const usageJson = (json as { usage?: unknown }).usage;
    const reportedUsage = anthropicUsageSchema.safeParse(usageJson);
    const reasoning = answerReasoning((json as { content: unknown[] }).content);
    return {
      choices: [{
        index: 0,
        content: content === '' && toolCalls.length > 0 ? null : content,
        refusal: null,
        toolCalls,
        finishReason: finishReasonOf(message.stop_reason, toolCalls.length > 0),
        logprobs: null,
        ...(reasoning === undefined ? {} : { reasoning }),
      }],
      usage: reportedUsage.success
        ? {
          promptTokens: anthropicPromptTokens(reportedUsage.data), completionTokens: reportedUsage.data.output_tokens,
          ...anthropicTokenClasses((json as { usage: Record<string, unknown> }).usage),
        }
        : undefined,
    };
  },

  createStreamDecoder: () => new AnthropicStreamDecoder(),
};
