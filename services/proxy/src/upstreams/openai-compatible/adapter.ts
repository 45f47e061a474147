import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import type { ForwardedParam } from '../../domain/chat-request.ts';
import type { UpstreamTarget } from '../../domain/config-snapshot.ts';
import { standardFinishReason } from '../../domain/normalized-completion.ts';
import type {
  NormalizedChoice, NormalizedCompletion, NormalizedTokenLogprob, NormalizedUsage, UpstreamAdapter, UpstreamChatRequest, UpstreamRequest,
} from '../upstream-adapter.ts';
import { createOpenAiCompatibleEmbeddings } from './embeddings.ts';
import { openAiTokenClasses } from './token-classes.ts';
import { openAiCacheMessages, openAiCacheTools, openAiPromptCacheKey, type PromptCacheKeyPolicy } from './prompt-cache.ts';
import { messagesWithoutReasoning, reasoningBlocksIn } from './reasoning.ts';
import { OpenAiStreamDecoder } from './stream-decoder.ts';

const bytesSchema = z.array(z.number().int()).nullish();

const tokenLogprobSchema = z.object({
  token: z.string(),
  logprob: z.number(),
  bytes: bytesSchema,
  top_logprobs: z.array(z.object({ token: z.string(), logprob: z.number(), bytes: bytesSchema })).nullish(),
});

// Only the fields below survive parsing (zod drops unknown keys): this schema is the
// allowlist of what an upstream completion may contribute to the client's response.
const choiceSchema = z.object({
  index: z.number().int().nonnegative().optional(),
  message: z.object({
    content: z.string().nullish(),
    refusal: z.string().nullish(),
    tool_calls: z.array(z.object({
      id: z.string(),
      function: z.object({ name: z.string(), arguments: z.string() }),
    })).nullish(),
  }),
  finish_reason: z.string().nullish(),
  logprobs: z.object({
    content: z.array(tokenLogprobSchema).nullish(),
    refusal: z.array(tokenLogprobSchema).nullish(),
  }).nullish(),
});

const completionSchema = z.object({ choices: z.array(choiceSchema).min(1) });

const usageSchema = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
});

function logprobsOf(entries: Array<z.infer<typeof tokenLogprobSchema>> | null | undefined): NormalizedTokenLogprob[] | null {
  if (entries === undefined || entries === null) return null;
  return entries.map((entry) => ({
    token: entry.token,
    logprob: entry.logprob,
    bytes: entry.bytes ?? null,
    top_logprobs: (entry.top_logprobs ?? []).map((top) => ({ token: top.token, logprob: top.logprob, bytes: top.bytes ?? null })),
  }));
}

function choiceOf(choice: z.infer<typeof choiceSchema>, position: number, raw: unknown): NormalizedChoice {
  const toolCalls = (choice.message.tool_calls ?? []).map((call) => ({
    id: call.id, type: 'function' as const, function: { name: call.function.name, arguments: call.function.arguments },
  }));
  return {
    index: choice.index ?? position,
    content: choice.message.content ?? null,
    refusal: choice.message.refusal ?? null,
    toolCalls,
    finishReason: standardFinishReason(choice.finish_reason, toolCalls.length > 0),
    logprobs: choice.logprobs === undefined || choice.logprobs === null
      ? null
      : { content: logprobsOf(choice.logprobs.content), refusal: logprobsOf(choice.logprobs.refusal) },
    ...withReasoning(raw),
  };
}

/** The reasoning of a raw choice's message (read apart from the schema: its field name varies by server). */
function withReasoning(raw: unknown): { reasoning?: NormalizedChoice['reasoning'] } {
  const reasoning = reasoningBlocksIn((raw as { message?: unknown } | undefined)?.message);
  return reasoning === undefined ? {} : { reasoning };
}

/** What distinguishes one OpenAI-compatible provider from another: a short configuration. */
export interface OpenAiCompatibleProvider {
  /** The `provider_kind` of its gateway models. */
  providerKind: string;
  /** How the credential travels: `Authorization: Bearer` (most) or Azure's `api-key` header. */
  credentialHeader: 'bearer' | 'api-key';
  /** The field that carries the completion budget: OpenAI's reasoning models only take `max_completion_tokens`. */
  maxTokensField: 'max_tokens' | 'max_completion_tokens';
  /** Query string the provider requires on every call when the base URL has none (Azure's api-version). */
  defaultQuery?: string;
  /** Forwarded params the provider does not support: sending one is a 400 naming it. */
  unsupportedParams?: readonly ForwardedParam[];
  /** When it is sent a `prompt_cache_key` (prompt-cache.ts); default `never`. */
  promptCacheKey?: PromptCacheKeyPolicy;
}

/**
 * The adapter for an upstream that speaks OpenAI's chat completions API. The request carries
 * the upstream's model name, the validated messages, the gateway's max_tokens and the forwarded
 * optional params — nothing else the client sent. When streaming it always asks for the usage
 * chunk (`stream_options.include_usage`), whatever the client asked. The credential goes in
 * the provider's header only when the gateway model has one.
 */
export function createOpenAiCompatibleAdapter(provider: OpenAiCompatibleProvider): UpstreamAdapter {
  const unsupported = provider.unsupportedParams ?? [];
  return {
    providerKind: provider.providerKind,

    buildRequest(target: UpstreamTarget, chat: UpstreamChatRequest): UpstreamRequest {
      for (const param of unsupported) {
        if (chat.request.params[param] !== undefined) {
          throw new GatewayError('invalid_request', { param, publicMessage: `The parameter '${param}' is not supported by this model.` });
        }
      }
      const headers: Record<string, string> = {
        'content-type': 'application/json', accept: chat.request.stream ? 'text/event-stream' : 'application/json',
      };
      if (target.apiKey !== '') {
        if (provider.credentialHeader === 'api-key') headers['api-key'] = target.apiKey;
        else headers.authorization = `Bearer ${target.apiKey}`;
      }
      const body: Record<string, unknown> = {
        model: target.model,
        // Earlier turns' reasoning is left out (messagesWithoutReasoning), then the cache scope marked.
        messages: openAiCacheMessages({ ...chat.request, messages: messagesWithoutReasoning(chat.request.messages) }, chat.cacheScope),
        [provider.maxTokensField]: chat.maxTokens,
        ...chat.request.params,
      };
      if (body.tools !== undefined) body.tools = openAiCacheTools(body.tools);
      const promptCacheKey = openAiPromptCacheKey(chat.request, chat.cacheScope, provider.promptCacheKey ?? 'never');
      if (promptCacheKey !== undefined) body.prompt_cache_key = promptCacheKey;
      if (chat.reasoning?.effort !== undefined) body.reasoning_effort = chat.reasoning.effort;
      if (chat.request.stream) {
        body.stream = true;
        body.stream_options = { include_usage: true };
      }
      const query = provider.defaultQuery !== undefined && !target.baseUrl.includes('?') ? `?${provider.defaultQuery}` : '';
      return { path: `/chat/completions${query}`, headers, body: JSON.stringify(body) };
    },

    parseResponse(json: unknown): NormalizedCompletion {
      const completion = completionSchema.parse(json);
      const usageJson = (json as { usage?: unknown }).usage;
      const reportedUsage = usageSchema.safeParse(usageJson);
      const usage: NormalizedUsage | undefined = reportedUsage.success
        ? {
          promptTokens: reportedUsage.data.prompt_tokens, completionTokens: reportedUsage.data.completion_tokens,
          ...openAiTokenClasses((json as { usage: Record<string, unknown> }).usage),
        }
        : undefined;
      const rawChoices = (json as { choices: unknown[] }).choices;
      return { choices: completion.choices.map((choice, position) => choiceOf(choice, position, rawChoices[position])), usage };
    },

    createStreamDecoder: () => new OpenAiStreamDecoder(),
    embeddings: createOpenAiCompatibleEmbeddings(provider),
  };
}

/** The generic OpenAI-compatible adapter (`openai_compatible`): any server that speaks the API with a bearer key. */
export const openAiCompatibleAdapter: UpstreamAdapter = createOpenAiCompatibleAdapter({
  providerKind: 'openai_compatible', credentialHeader: 'bearer', maxTokensField: 'max_tokens', promptCacheKey: 'when_sent',
});
