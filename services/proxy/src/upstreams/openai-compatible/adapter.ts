import { z } from 'zod';
import type { UpstreamTarget } from '../../domain/config-snapshot.ts';
import type {
  NormalizedChoice, NormalizedCompletion, NormalizedTokenLogprob, NormalizedUsage, UpstreamAdapter, UpstreamChatRequest, UpstreamRequest,
} from '../upstream-adapter.ts';

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

const knownFinishReasons = new Set(['stop', 'length', 'tool_calls', 'content_filter', 'function_call']);

function logprobsOf(entries: Array<z.infer<typeof tokenLogprobSchema>> | null | undefined): NormalizedTokenLogprob[] | null {
  if (entries === undefined || entries === null) return null;
  return entries.map((entry) => ({
    token: entry.token,
    logprob: entry.logprob,
    bytes: entry.bytes ?? null,
    top_logprobs: (entry.top_logprobs ?? []).map((top) => ({ token: top.token, logprob: top.logprob, bytes: top.bytes ?? null })),
  }));
}

function choiceOf(choice: z.infer<typeof choiceSchema>, position: number): NormalizedChoice {
  const toolCalls = (choice.message.tool_calls ?? []).map((call) => ({
    id: call.id, type: 'function' as const, function: { name: call.function.name, arguments: call.function.arguments },
  }));
  const finishReason = choice.finish_reason ?? '';
  return {
    index: choice.index ?? position,
    content: choice.message.content ?? null,
    refusal: choice.message.refusal ?? null,
    toolCalls,
    // A vendor-specific reason says something about the vendor; clients get the nearest standard one.
    finishReason: knownFinishReasons.has(finishReason) ? finishReason : toolCalls.length > 0 ? 'tool_calls' : 'stop',
    logprobs: choice.logprobs === undefined || choice.logprobs === null
      ? null
      : { content: logprobsOf(choice.logprobs.content), refusal: logprobsOf(choice.logprobs.refusal) },
  };
}

/**
 * The adapter for upstreams that speak OpenAI's chat completions API (OpenAI itself, and the
 * many providers and servers compatible with it). The request carries the upstream's model
 * name, the validated messages, the gateway's max_tokens and the forwarded optional params —
 * nothing else the client sent. The credential goes in `Authorization: Bearer` only when the
 * gateway model has one.
 */
export const openAiCompatibleAdapter: UpstreamAdapter = {
  providerKind: 'openai_compatible',

  buildRequest(target: UpstreamTarget, chat: UpstreamChatRequest): UpstreamRequest {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (target.apiKey !== '') headers.authorization = `Bearer ${target.apiKey}`;
    const body = {
      model: target.model,
      messages: chat.request.messages,
      max_tokens: chat.maxTokens,
      ...chat.request.params,
    };
    return { path: '/chat/completions', headers, body: JSON.stringify(body) };
  },

  parseResponse(json: unknown): NormalizedCompletion {
    const completion = completionSchema.parse(json);
    const reportedUsage = usageSchema.safeParse((json as { usage?: unknown }).usage);
    const usage: NormalizedUsage | undefined = reportedUsage.success
      ? { promptTokens: reportedUsage.data.prompt_tokens, completionTokens: reportedUsage.data.completion_tokens }
      : undefined;
    return { choices: completion.choices.map(choiceOf), usage };
  },
};
