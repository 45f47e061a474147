/**
 * Steering directives a test (or a curious demo user) writes into the LAST user message to
 * make the fake upstream misbehave on purpose:
 *
 * | directive               | effect                                                            |
 * |-------------------------|-------------------------------------------------------------------|
 * | `[[fake:status=503]]`   | answer that HTTP status with a vendor error body (leaks text)     |
 * | `[[fake:reply_words=N]]`| reply with exactly N words `w1 w2 … wN`                           |
 * | `[[fake:no_usage]]`     | leave `usage` out of the response (and out of the stream)         |
 * | `[[fake:delay_ms=N]]`   | wait N ms before answering                                        |
 * | `[[fake:hang]]`         | never answer (for timeout tests); the socket stays open           |
 * | `[[fake:ignore_max_tokens]]` | reply in full whatever max_tokens says (a runaway upstream)  |
 * | `[[fake:chunk_delay_ms=N]]` | when streaming, wait N ms before each word chunk              |
 * | `[[fake:pause_after=N]]` | when streaming, after N word chunks send nothing for `pause_ms` (a stream with no new tokens for a while) |
 * | `[[fake:pause_ms=N]]`   | with `pause_after`: how long the silence lasts, ms (default 1000)  |
 * | `[[fake:fail_after=N]]` | when streaming, cut the connection after N word chunks            |
 * | `[[fake:error_after=N]]`| when streaming, send an in-stream error event (vendor text) after N word chunks, then end |
 * | `[[fake:tag=ID]]`       | no effect on the reply; recorded as the request's `tag` (the fault suite's request ids) |
 * | `[[fake:tool_call=NAME]]` | reply with one call of the tool NAME (arguments `{"query": <the message>}`), id in the vendor's own form |
 * | `[[fake:tool_text=N]]`  | with `tool_call`: N words `w1 … wN` of text before the call ("Let me look that up."), streamed and not, both routes; billed as N more output tokens |
 * | `[[fake:tool_arg=KEY:VALUE]]` | with `tool_call`: the call's arguments are `{"KEY": "VALUE"}` instead (e.g. `file_path:/tmp/x/a.txt` for an agent's Read tool) |
 * | `[[fake:repeat_tool_id]]` | with `tool_call`, chat completions only: the call's id in every streamed arguments fragment, not just the first (as vLLM sends it) |
 * | `[[fake:usage_classes=cached:40,write5m:10,write1h:5,reasoning:20,audio:3]]` | text replies: report these token price classes in the wire format's own usage fields (OpenAI `prompt_tokens_details.cached_tokens`/`audio_tokens`, `completion_tokens_details.reasoning_tokens`; Anthropic `cache_read_input_tokens`, `cache_creation_input_tokens` with `cache_creation.ephemeral_5m_input_tokens`/`ephemeral_1h_input_tokens`). Input classes are parts of the prompt count (held to it); reasoning tokens are spent on top of the reply's words (hidden, counted in the output) |
 *
 * Unknown or malformed directives are ignored, so a typo shows up as a normal reply.
 */
export interface Directives {
  /** HTTP status to answer with instead of a completion. */
  status?: number;
  /** Exact number of words of the reply. */
  replyWords?: number;
  /** Whether to omit usage. */
  noUsage: boolean;
  /** Wait before answering, milliseconds. */
  delayMs?: number;
  /** Never answer. */
  hang: boolean;
  /** Reply in full whatever max_tokens says. */
  ignoreMaxTokens: boolean;
  /** Streaming: wait before each word chunk, milliseconds. */
  chunkDelayMs?: number;
  /** Streaming: after this many word chunks, a silence of `pauseMs` (no bytes at all). */
  pauseAfter?: number;
  /** Streaming, with `pauseAfter`: the silence, milliseconds. */
  pauseMs?: number;
  /** Streaming: cut the connection after this many word chunks. */
  failAfter?: number;
  /** Streaming: send an error event after this many word chunks. */
  errorAfter?: number;
  /** A caller's label for the request (1..128 of `A-Za-z0-9._:-`), kept in the request log. */
  tag?: string;
  /** Reply with a call of this tool (1..64 of `A-Za-z0-9_-`) instead of text. */
  toolCall?: string;
  /** With `toolCall`: words of text the reply writes before its tool call. */
  toolText?: number;
  /** With `toolCall`: the one argument of the call (key 1..64 of `A-Za-z0-9_`, value any text without `]`). */
  toolArg?: { key: string; value: string };
  /** With `toolCall`, streamed chat completions: repeat the call's id in every arguments fragment. */
  repeatToolId?: true;
  /** Token price classes to report in usage: input classes as parts of the prompt, reasoning on top of the reply. */
  usageClasses?: UsageClasses;
}

/** Token counts by price class a `usage_classes` directive asks the fake to report. */
export interface UsageClasses {
  cached: number;
  write5m: number;
  write1h: number;
  reasoning: number;
  audio: number;
}

/** Parses `cached:40,write5m:10,...`; undefined when any part is not `name:count` of a known class. */
function usageClasses(value: string | undefined): UsageClasses | undefined {
  const classes: UsageClasses = { cached: 0, write5m: 0, write1h: 0, reasoning: 0, audio: 0 };
  for (const part of (value ?? '').split(',')) {
    const match = /^(cached|write5m|write1h|reasoning|audio):(\d{1,9})$/.exec(part);
    if (match === null) return undefined;
    classes[match[1] as keyof UsageClasses] = Number(match[2]);
  }
  return classes;
}

const directivePattern = /\[\[fake:([a-z_]+)(?:=([^\]]*))?\]\]/g;

/** Parses a non-negative integer directive value; undefined when it is not one. */
function nonNegativeInteger(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,9}$/.test(value)) return undefined;
  return Number(value);
}

/** Reads the directives out of a message text. */
export function parseDirectives(text: string): Directives {
  const directives: Directives = { noUsage: false, hang: false, ignoreMaxTokens: false };
  for (const match of text.matchAll(directivePattern)) {
    const [, name, value] = match;
    switch (name) {
      case 'status': {
        const status = nonNegativeInteger(value);
        if (status !== undefined && status >= 100 && status <= 599) directives.status = status;
        break;
      }
      case 'reply_words': directives.replyWords = nonNegativeInteger(value); break;
      case 'delay_ms': directives.delayMs = nonNegativeInteger(value); break;
      case 'no_usage': directives.noUsage = true; break;
      case 'hang': directives.hang = true; break;
      case 'ignore_max_tokens': directives.ignoreMaxTokens = true; break;
      case 'chunk_delay_ms': directives.chunkDelayMs = nonNegativeInteger(value); break;
      case 'pause_after': directives.pauseAfter = nonNegativeInteger(value); break;
      case 'pause_ms': directives.pauseMs = nonNegativeInteger(value); break;
      case 'fail_after': directives.failAfter = nonNegativeInteger(value); break;
      case 'error_after': directives.errorAfter = nonNegativeInteger(value); break;
      case 'tag': if (value !== undefined && /^[A-Za-z0-9._:-]{1,128}$/.test(value)) directives.tag = value; break;
      case 'tool_text': directives.toolText = nonNegativeInteger(value); break;
      case 'repeat_tool_id': directives.repeatToolId = true; break;
      case 'usage_classes': directives.usageClasses = usageClasses(value); break;
      case 'tool_arg': {
        const arg = /^([A-Za-z0-9_]{1,64}):(.*)$/s.exec(value ?? '');
        if (arg !== null) directives.toolArg = { key: arg[1]!, value: arg[2]! };
        break;
      }
      case 'tool_call': if (value !== undefined && /^[A-Za-z0-9_-]{1,64}$/.test(value)) directives.toolCall = value; break;
      default: break;
    }
  }
  return directives;
}

/** The text with every directive removed, so the echoed reply reads naturally. */
export function withoutDirectives(text: string): string {
  return text.replace(directivePattern, '').replace(/\s+/g, ' ').trim();
}
