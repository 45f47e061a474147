import { standardFinishReason } from '../../domain/normalized-completion.ts';
import type { NormalizedTokenLogprob } from '../../domain/normalized-completion.ts';
import type { StreamChoice, StreamDecoder, StreamEventSink, StreamToolCallDelta } from '../upstream-adapter.ts';
import { openAiTokenClasses } from './token-classes.ts';
import { reasoningTextIn } from './reasoning.ts';
import { isObject } from '../wire-values.ts';

type Json = Record<string, unknown>;

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function bytesOf(value: unknown): number[] | null {
  return Array.isArray(value) && value.every((b) => Number.isInteger(b)) ? value as number[] : null;
}

/** Allowlisted token logprobs; anything malformed is dropped rather than relayed. */
function logprobEntries(value: unknown): NormalizedTokenLogprob[] | null {
  if (!Array.isArray(value)) return null;
  const entries: NormalizedTokenLogprob[] = [];
  for (const entry of value) {
    if (!isObject(entry) || typeof entry.token !== 'string' || typeof entry.logprob !== 'number') continue;
    const tops = Array.isArray(entry.top_logprobs) ? entry.top_logprobs : [];
    entries.push({
      token: entry.token,
      logprob: entry.logprob,
      bytes: bytesOf(entry.bytes),
      top_logprobs: tops
        .filter((top): top is Json => isObject(top) && typeof top.token === 'string' && typeof top.logprob === 'number')
        .map((top) => ({ token: top.token as string, logprob: top.logprob as number, bytes: bytesOf(top.bytes) })),
    });
  }
  return entries;
}

function toolCallDeltas(value: unknown, position: number): { calls: StreamToolCallDelta[]; text: string } {
  const calls: StreamToolCallDelta[] = [];
  let text = '';
  if (!Array.isArray(value)) return { calls, text };
  for (let i = 0; i < value.length; i += 1) {
    const call = value[i];
    if (!isObject(call)) continue;
    const delta: StreamToolCallDelta = { index: isCount(call.index) ? call.index : position + i };
    if (typeof call.id === 'string') delta.id = call.id;
    if (call.type === 'function') delta.type = 'function';
    if (isObject(call.function)) {
      const fn: { name?: string; arguments?: string } = {};
      if (typeof call.function.name === 'string') { fn.name = call.function.name; text += call.function.name; }
      if (typeof call.function.arguments === 'string') { fn.arguments = call.function.arguments; text += call.function.arguments; }
      delta.function = fn;
    }
    calls.push(delta);
  }
  return { calls, text };
}

/** A top-level member the fast path may skip: any key but `error` and `choices` (which decide), with a string without escapes, a number or null. */
const skippedMember = String.raw`"(?!error"|choices")[A-Za-z0-9_]{1,64}":(?:"[^"\\\x00-\x1f]*"|-?[0-9][0-9.eE+-]*|null)`;

/**
 * The chunk nearly every stream consists of, matched without JSON.parse (whose allocations were
 * a large part of a stream's CPU): one choice of index 0 whose delta is a content string without
 * escapes (optionally after `"role":"assistant"`), no logprobs, no finish reason, and besides
 * `choices` only flat members (id, object, created, model, system_fingerprint, `usage: null`, …),
 * none of them `error`. The content is relayed as the same JSON text JSON.stringify would give: a
 * JSON string without a backslash or control character (raw control characters are not JSON: those
 * chunks go to the parse, which refuses them) is its own serialisation, so the choices array is
 * relayed as the very substring of the upstream's chunk (no new string). Anything else (escapes, tool calls, logprobs, finish reasons, a usage object,
 * nested vendor fields) takes the full allowlisting parse below, so the bytes the client gets are
 * the same either way.
 */
const commonContentChunk = new RegExp(
  `^\\{(?:${skippedMember},)*"choices":(\\[\\{"index":0,"delta":\\{(?:"role":"assistant",)?"content":"([^"\\\\\\x00-\\x1f]*)"\\},"logprobs":null,"finish_reason":null\\}\\])(?:,${skippedMember})*\\}$`,
);

/**
 * Decodes an OpenAI-compatible chunk stream. Every chunk is rebuilt from an allowlist (role,
 * content, refusal, tool call fragments, logprobs, a standard finish reason), so nothing of the
 * upstream's id, model, fingerprint or vendor fields can pass; `data: [DONE]` ends the stream,
 * and a chunk carrying `error` is an upstream failure whose text goes nowhere.
 */
export class OpenAiStreamDecoder implements StreamDecoder {
  /** Decodes one `data:` payload. */
  decode(_event: string | undefined, data: string, out: StreamEventSink): void {
    if (data === '[DONE]') { out.push({ kind: 'done' }); return; }
    const common = commonContentChunk.exec(data);
    if (common !== null) {
      // The shape of nearly every chunk: one text delta and nothing else of ours (see
      // commonContentChunk); its choices array is relayed as the upstream's own substring.
      out.push({ kind: 'text', text: common[2]!, json: common[1]! });
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      out.push({ kind: 'error', reason: 'chunk is not JSON' });
      return;
    }
    if (!isObject(chunk)) { out.push({ kind: 'error', reason: 'chunk is not an object' }); return; }
    if (chunk.error !== undefined && chunk.error !== null) { out.push({ kind: 'error', reason: 'upstream sent an error event' }); return; }

    if (Array.isArray(chunk.choices) && chunk.choices.length > 0) {
      const choices: StreamChoice[] = [];
      let text = '';
      for (let position = 0; position < chunk.choices.length; position += 1) {
        const choice = chunk.choices[position];
        if (!isObject(choice)) continue;
        const source = isObject(choice.delta) ? choice.delta : {};
        const delta: StreamChoice['delta'] = {};
        if (source.role === 'assistant') delta.role = 'assistant';
        const reasoning = reasoningTextIn(source);
        if (reasoning !== undefined && reasoning !== '') { delta.reasoning_content = reasoning; text += reasoning; }
        if (typeof source.content === 'string') { delta.content = source.content; text += source.content; }
        if (typeof source.refusal === 'string') { delta.refusal = source.refusal; text += source.refusal; }
        const tools = toolCallDeltas(source.tool_calls, 0);
        if (tools.calls.length > 0) { delta.tool_calls = tools.calls; text += tools.text; }
        const finishReason = choice.finish_reason === null || choice.finish_reason === undefined
          ? null
          : standardFinishReason(choice.finish_reason, tools.calls.length > 0);
        const logprobs = isObject(choice.logprobs)
          ? { content: logprobEntries(choice.logprobs.content), refusal: logprobEntries(choice.logprobs.refusal) }
          : null;
        choices.push({ index: isCount(choice.index) ? choice.index : position, delta, logprobs, finish_reason: finishReason });
      }
      if (choices.length > 0) out.push({ kind: 'chunk', choices, text });
    }
    const usage = chunk.usage;
    if (isObject(usage) && isCount(usage.prompt_tokens) && isCount(usage.completion_tokens)) {
      out.push({ kind: 'usage', usage: { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, ...openAiTokenClasses(usage) } });
    }
  }
}
