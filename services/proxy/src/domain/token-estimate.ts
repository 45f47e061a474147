import { createRequire } from 'node:module';
import type { decode as DecodeTokens, encode as EncodeText } from 'gpt-tokenizer/encoding/cl100k_base';
import type { ChatMessage, ChatRequest } from './chat-request.ts';
import { MediaTokenCounter } from './media-tokens.ts';
import type { TokenizerName } from './config-snapshot.ts';

/** Tokens OpenAI's chat format adds per message (role and separators). */
const tokensPerMessage = 3;
/** Tokens OpenAI's chat format adds once per request (the assistant reply primer). */
const tokensPerRequest = 3;


// Special-token text such as "<|endoftext|>" in user content is counted as ordinary text;
// the tokenizer's default would throw on it.
const plainText = { disallowedSpecial: new Set<string>() };

// Each encoding's rank tables cost about 35 MB of memory and 100-170 ms to load, so one is
// loaded only once a model counted with it is served (synchronously: counting is synchronous).
const requireEncoding = createRequire(import.meta.url);
const encodingModules: Record<TokenizerName, string> = {
  o200k_base: 'gpt-tokenizer/encoding/o200k_base',
  cl100k_base: 'gpt-tokenizer/encoding/cl100k_base',
};
const loadedEncoders = new Map<TokenizerName, typeof EncodeText>();

function encoderOf(tokenizer: TokenizerName): typeof EncodeText {
  let encode = loadedEncoders.get(tokenizer);
  if (encode === undefined) {
    encode = (requireEncoding(encodingModules[tokenizer]) as { encode: typeof EncodeText }).encode;
    loadedEncoders.set(tokenizer, encode);
  }
  return encode;
}

/**
 * Loads an encoding now if it is not loaded yet, so the first request counted with it does not
 * pay for the load; called when a model using it arrives in the config snapshot.
 */
export function loadTokenizer(tokenizer: TokenizerName): void {
  encoderOf(tokenizer);
}

// OpenAI's GPT-4o generation and later (and their open-weight gpt-oss) use o200k_base.
const o200kModelPattern = /^(?:gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|chatgpt-4o|gpt-oss|o1|o3|o4)(?:\b|[-_.:])/i;

/**
 * The encoding that counts tokens for an upstream model. OpenAI's newer models use o200k_base;
 * everything else (GPT-4/3.5, Llama, Mistral, Claude, …) is counted with cl100k_base: exact for
 * the older OpenAI models, and for other families a close estimate that errs on the high side
 * (their vocabularies are at least as large), which keeps the Reserve on the safe side.
 */
export function tokenizerForModel(upstreamModel: string): TokenizerName {
  const name = upstreamModel.includes('/') ? upstreamModel.slice(upstreamModel.lastIndexOf('/') + 1) : upstreamModel;
  return o200kModelPattern.test(name) ? 'o200k_base' : 'cl100k_base';
}

// A stream counts every chunk it relays (the running-cost stop), and chunks are short and
// repeat (words, punctuation): their counts are remembered. A count depends only on the text and
// the encoding, so a remembered count is exact. Bounded: texts up to 64 characters, at most
// 16,384 per encoding (about 1-2 MB), forgotten all at once when full.
const cachedTextMaxChars = 64;
const cachedTextsMax = 16_384;
const cachedCounts: Record<TokenizerName, Map<string, number>> = { o200k_base: new Map(), cl100k_base: new Map() };

/**
 * The longest piece of text counted in one call, characters. BPE's cost grows with the square
 * of one pre-token's length (65,536 letters without a space took 1.35 s, 524,288 took 90 s,
 * blocking every request of the process), so a longer text is counted in pieces of at most
 * this many characters, cut before a space where there is one (the word after it keeps its
 * leading space, so ordinary text counts the same) and never inside a surrogate pair.
 */
const countedPieceMaxChars = 2048;

/** Tokens of a text longer than the cache takes: whole when short, else in pieces (countedPieceMaxChars). */
function countLongTextTokens(text: string, tokenizer: TokenizerName): number {
  const encode = encoderOf(tokenizer);
  if (text.length <= countedPieceMaxChars) return encode(text, plainText).length;
  let tokens = 0;
  for (let start = 0; start < text.length;) {
    let end = Math.min(start + countedPieceMaxChars, text.length);
    if (end < text.length) {
      const space = text.lastIndexOf(' ', end - 1);
      if (space > start + countedPieceMaxChars / 2) {
        end = space;
      } else {
        const before = text.charCodeAt(end - 1);
        if (before >= 0xd800 && before <= 0xdbff) end -= 1; // keep a surrogate pair whole
      }
    }
    tokens += encode(text.slice(start, end), plainText).length;
    start = end;
  }
  return tokens;
}

/** Tokens of a text in an encoding. */
export function countTextTokens(text: string, tokenizer: TokenizerName): number {
  if (text.length === 0) return 0;
  if (text.length > cachedTextMaxChars) return countLongTextTokens(text, tokenizer);
  const cache = cachedCounts[tokenizer];
  let tokens = cache.get(text);
  if (tokens === undefined) {
    tokens = encoderOf(tokenizer)(text, plainText).length;
    if (cache.size >= cachedTextsMax) cache.clear();
    cache.set(text, tokens);
  }
  return tokens;
}

/**
 * The longest start of a text that counts at most maxTokens tokens in an encoding: how a reply
 * is cut at its Reserve. The text of its first maxTokens tokens, when that decodes to a start
 * of the text (a token prefix can end inside a character, and then a few tokens fewer are
 * tried); otherwise a bisection on the text, never inside a surrogate pair. Every candidate is
 * counted, so the result never counts more than maxTokens.
 */
export function truncateToTokens(text: string, maxTokens: number, tokenizer: TokenizerName): string {
  if (maxTokens <= 0) return '';
  const encode = encoderOf(tokenizer);
  const tokens = encode(text, plainText);
  if (tokens.length <= maxTokens) return text;
  // The module is already loaded by encoderOf; require returns it from its cache.
  const { decode } = requireEncoding(encodingModules[tokenizer]) as { decode: typeof DecodeTokens };
  for (let keep = maxTokens; keep > 0 && keep > maxTokens - 8; keep -= 1) {
    const prefix = decode(tokens.slice(0, keep));
    if (text.startsWith(prefix) && encode(prefix, plainText).length <= maxTokens) return prefix;
  }
  let fits = 0; // a length known to fit
  let tooLong = text.length; // a length known not to
  while (tooLong - fits > 1) {
    let middle = Math.floor((fits + tooLong) / 2);
    const before = text.charCodeAt(middle - 1);
    if (before >= 0xd800 && before <= 0xdbff) middle -= 1; // keep a surrogate pair whole
    if (middle <= fits) break;
    if (encode(text.slice(0, middle), plainText).length <= maxTokens) fits = middle;
    else tooLong = middle;
  }
  return text.slice(0, fits);
}

/** The texts a message carries: its content (each part), name and tool calls. */
function messageTexts(message: ChatMessage): string[] {
  const parts: string[] = [];
  if (typeof message.content === 'string') parts.push(message.content);
  else if (Array.isArray(message.content)) for (const part of message.content) if (part.type === 'text') parts.push(part.text);
  if (message.name !== undefined) parts.push(message.name);
  for (const call of message.tool_calls ?? []) parts.push(call.function.name, call.function.arguments);
  // Earlier turns' reasoning sent back: Anthropic bills the last turn's thinking as input, so the
  // Reserve counts it all (an overestimate for upstreams that take none back, never an under one).
  for (const block of message.reasoning ?? []) parts.push(block.type === 'thinking' ? block.thinking : block.data);
  return parts;
}

/**
 * The prompt tokens a request is estimated at before any upstream call:
 * Σ (tokens of each message's texts + 3 + the most its image and audio parts can bill) + 3, plus
 * the tokens of the tool definitions when there are any (the upstream bills them as prompt too).
 * Media parts are counted by `media` (domain/media-tokens.ts, for the upstream's model family);
 * without one, at the largest bound of every family.
 */
export function estimatePromptTokens(request: Pick<ChatRequest, 'messages' | 'params'>, tokenizer: TokenizerName, media?: MediaTokenCounter): number {
  let tokens = tokensPerRequest;
  for (const message of request.messages) {
    tokens += tokensPerMessage;
    for (const text of messageTexts(message)) tokens += countTextTokens(text, tokenizer);
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) if (part.type !== 'text') tokens += (media ??= new MediaTokenCounter('')).tokensOf(part);
  }
  if (request.params.tools !== undefined) tokens += countTextTokens(JSON.stringify(request.params.tools), tokenizer);
  // A JSON schema for structured output is prompt the upstream bills too (Responses' text.format arrives as this).
  if (request.params.response_format !== undefined) tokens += countTextTokens(JSON.stringify(request.params.response_format), tokenizer);
  return tokens;
}
