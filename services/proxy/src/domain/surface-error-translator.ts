import { GatewayError } from '@gateway/errors';

/**
 * A surface other than chat completions (Messages, Responses) is served by translating its request
 * into the internal chat form, so the pipeline's later refusals (the media check, the estimate, a
 * tool-call id that does not open, an adapter) name internal params such as
 * `messages[3].content[1]`, which the client never sent. This module keeps, per internal message,
 * where it came from in the client's request, and rewrites such an error to name the client's field
 * in the surface's own spelling; each surface supplies only its spelling (SurfaceSpelling).
 */

/** Where one internal chat message came from in a surface's request, every path in that surface's spelling. */
export interface MessageSource {
  /** The item, turn, block or field the message was made from (`messages.2`, `input[4]`, `system`). */
  path: string;
  /** Its content: a `content` field, a tool result's content or output, or the path itself for a bare string. */
  contentPath: string;
  /** A `tool` message's call id, when the surface records one (else SurfaceSpelling.unrecorded.toolCallId decides). */
  toolCallIdPath?: string;
  /** The source of each content part, by the chat part's index. */
  partPaths: string[];
  /** The source of each tool call, by the chat call's index. */
  callPaths: string[];
}

/** What one surface names differently from the internal chat form: everything the shared walk cannot know. */
export interface SurfaceSpelling {
  /** The surface's name for the whole conversation (`messages`, `input`): named for `messages` and for a message nothing was recorded for. */
  conversation: string;
  /** A chat content part's param suffix (`.text`, `.image_url.url`) in the surface's part names; '' names the part itself. */
  partSuffixOf(chatSuffix: string): string;
  /** A chat tool call's param suffixes (`.id`, `.function.arguments`) in the surface's names; one not listed names the call itself. */
  callSuffixes: Readonly<Record<string, string>>;
  /** Where a param points when the record has no path for it. */
  unrecorded: {
    /** A message's `tool_call_id` when its source recorded no toolCallIdPath. */
    toolCallId(source: MessageSource): string;
    /** A tool call beyond the recorded ones. */
    call(source: MessageSource): string;
  };
  /** Internal top-level params the surface calls otherwise (`stop` is `stop_sequences`), exactly. */
  renamedParams: Readonly<Record<string, string>>;
  /** Internal params the surface spells by a pattern (`tools[0].function.parameters`), or undefined for none. */
  patternedParamOf(chatParam: string): string | undefined;
  /**
   * The surface's error shape has no param field (Anthropic's), so the message must name the
   * field: a message that did not name the internal param gets the surface's as a prefix.
   */
  paramlessErrors: boolean;
}

/** An internal chat param (as the pipeline's checks and the adapters name it) in the surface's request, by the recorded sources. */
function surfaceParamOf(chatParam: string, sources: readonly MessageSource[], spelling: SurfaceSpelling): string {
  const message = /^messages\[(\d+)\](.*)$/.exec(chatParam);
  if (message === null) {
    if (chatParam === 'messages') return spelling.conversation;
    if (Object.hasOwn(spelling.renamedParams, chatParam)) return spelling.renamedParams[chatParam]!;
    return spelling.patternedParamOf(chatParam) ?? chatParam;
  }
  const source = sources[Number(message[1])];
  const rest = message[2]!;
  if (source === undefined) return spelling.conversation;
  if (rest === '.content') return source.contentPath;
  if (rest === '.tool_call_id') return source.toolCallIdPath ?? spelling.unrecorded.toolCallId(source);
  const part = /^\.content\[(\d+)\](.*)$/.exec(rest);
  if (part !== null) {
    const partPath = source.partPaths[Number(part[1])];
    return partPath === undefined ? source.contentPath : partPath + spelling.partSuffixOf(part[2]!);
  }
  const call = /^\.tool_calls\[(\d+)\](.*)$/.exec(rest);
  if (call !== null) {
    const callPath = source.callPaths[Number(call[1])];
    if (callPath === undefined) return spelling.unrecorded.call(source);
    const suffix = call[2]!;
    return callPath + (Object.hasOwn(spelling.callSuffixes, suffix) ? spelling.callSuffixes[suffix]! : '');
  }
  // The message itself, its role or its name: the client's item or turn.
  return source.path;
}

/**
 * The error a surface's client sees for one the pipeline threw: a GatewayError naming an internal
 * param names the surface's field instead, in its param and its message, keeping its code (a 413
 * stays a 413), headers and cause; anything else is returned as it is. `sources` is read when an
 * error is translated, so it may still be filled after this is made.
 */
export function surfaceErrorTranslator(spelling: SurfaceSpelling, sources: readonly MessageSource[]): (error: unknown) => unknown {
  return (error) => {
    if (!(error instanceof GatewayError) || error.param === null) return error;
    const param = surfaceParamOf(error.param, sources, spelling);
    if (param === error.param) return error;
    const publicMessage = spelling.paramlessErrors && !error.publicMessage.includes(error.param)
      ? `${param}: ${error.publicMessage}`
      : error.publicMessage.split(error.param).join(param);
    return new GatewayError(error.code, { param, publicMessage, headers: error.headers, internalMessage: error.message, cause: error });
  };
}
