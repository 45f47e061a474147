import { createHash } from 'node:crypto';

// Prompt caching as the two wire formats' providers do it, small enough to reason about in a
// test. The fake's caches are shared by every caller of one fake upstream, as a real provider's
// are shared by every customer of one upstream account: isolating organisations is the
// gateway's job, and this module must not do it for it.

/** A cache lifetime Anthropic offers, as its `cache_control.ttl` names it. */
export type CacheTtl = '5m' | '1h';

/** Lifetime of each Anthropic cache TTL, ms. */
const ttlMs: Readonly<Record<CacheTtl, number>> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };

/** One unit of a prompt, in prefix order: what it is (hashed) and what it counts, tokens. */
export interface PromptBlock {
  /** The block's identity: any JSON the block's content and position are judged by. */
  identity: unknown;
  /** Tokens the block counts in the fake's usage. */
  tokens: number;
  /** Anthropic only: the block carries a `cache_control` breakpoint with this lifetime. */
  breakpoint?: CacheTtl;
}

/** What one Anthropic request read from and wrote to the cache, tokens. */
export interface AnthropicCacheUsage {
  readTokens: number;
  write5mTokens: number;
  write1hTokens: number;
}

/** Options of a PrefixCache. */
export interface PrefixCacheOptions {
  /**
   * Fewest prompt tokens a cached prefix covers, as the providers have one (1024 for OpenAI's
   * automatic cache and Anthropic's Sonnet models); default 1024, tests set it smaller.
   */
  minTokens?: number;
  /** The clock lifetimes are judged by, ms; default Date.now (tests pass their own, and never sleep). */
  now?: () => number;
}

/** Chained hashes of a prompt's prefixes: entry i identifies blocks 0..i, under a partition. */
function prefixHashes(partition: string, blocks: readonly PromptBlock[]): string[] {
  const hashes: string[] = [];
  let previous = createHash('sha256').update(partition).digest('hex');
  for (const block of blocks) {
    previous = createHash('sha256').update(previous).update(JSON.stringify(block.identity) ?? 'null').digest('hex');
    hashes.push(previous);
  }
  return hashes;
}

/**
 * The fake upstream's prompt caches, one per wire format, shared by every caller (see above).
 * OpenAI's is automatic: every request of at least `minTokens` prompt tokens is cached at each
 * block boundary, and a request reads the longest cached prefix of whole blocks (within its
 * `prompt_cache_key`, which the fake honours strictly as a partition). Anthropic's caches only
 * at `cache_control` breakpoints over tools → system → messages, for 5 minutes or an hour
 * (a read refreshes the lifetime), and reads the longest cached prefix up to the last breakpoint.
 */
export class PrefixCache {
  readonly #minTokens: number;
  readonly #now: () => number;
  /** Automatic (OpenAI) entries: prefix hashes seen. */
  readonly #automatic = new Set<string>();
  /** Anthropic entries: prefix hash → expiry, ms. */
  readonly #breakpoints = new Map<string, number>();

  constructor(options: PrefixCacheOptions = {}) {
    this.#minTokens = options.minTokens ?? 1024;
    this.#now = options.now ?? Date.now;
  }

  /**
   * OpenAI's automatic prefix cache: the tokens of the longest prefix of whole blocks that an
   * earlier request of the same model and `prompt_cache_key` had (at least `minTokens`, else 0),
   * then this request's prefixes are remembered.
   */
  openAiCachedTokens(model: string, promptCacheKey: string | undefined, blocks: readonly PromptBlock[]): number {
    const hashes = prefixHashes(`openai\u0000${model}\u0000${promptCacheKey ?? ''}`, blocks);
    let covered = 0;
    let cached = 0;
    hashes.forEach((hash, index) => {
      covered += blocks[index]!.tokens;
      if (this.#automatic.has(hash)) cached = covered;
    });
    const total = covered;
    if (total >= this.#minTokens) {
      let prefix = 0;
      hashes.forEach((hash, index) => {
        prefix += blocks[index]!.tokens;
        if (prefix >= this.#minTokens) this.#automatic.add(hash);
      });
    }
    return cached >= this.#minTokens ? cached : 0;
  }

  /**
   * Anthropic's breakpoint cache: reads the longest live prefix ending at or before the last
   * breakpoint (refreshing its lifetime), then writes each later breakpoint's prefix, counting
   * the tokens between one cached point and the next as written with that breakpoint's TTL.
   */
  anthropicUsage(model: string, blocks: readonly PromptBlock[]): AnthropicCacheUsage {
    const usage: AnthropicCacheUsage = { readTokens: 0, write5mTokens: 0, write1hTokens: 0 };
    const lastBreakpoint = blocks.findLastIndex((block) => block.breakpoint !== undefined);
    if (lastBreakpoint < 0) return usage;
    const now = this.#now();
    const hashes = prefixHashes(`anthropic\u0000${model}`, blocks);
    const prefixTokens: number[] = [];
    blocks.reduce((sum, block) => { prefixTokens.push(sum + block.tokens); return sum + block.tokens; }, 0);
    let readEnd = -1;
    for (let index = lastBreakpoint; index >= 0; index -= 1) {
      const expiry = this.#breakpoints.get(hashes[index]!);
      if (expiry !== undefined && expiry > now) { readEnd = index; break; }
    }
    if (readEnd >= 0) {
      usage.readTokens = prefixTokens[readEnd]!;
      const entry = hashes[readEnd]!;
      const ttl = this.#breakpoints.get(entry)! - now > ttlMs['5m'] ? ttlMs['1h'] : ttlMs['5m'];
      this.#breakpoints.set(entry, now + ttl);
    }
    let cachedUpTo = readEnd >= 0 ? prefixTokens[readEnd]! : 0;
    for (let index = readEnd + 1; index <= lastBreakpoint; index += 1) {
      const ttl = blocks[index]!.breakpoint;
      if (ttl === undefined || prefixTokens[index]! < this.#minTokens) continue;
      const written = prefixTokens[index]! - cachedUpTo;
      if (ttl === '1h') usage.write1hTokens += written;
      else usage.write5mTokens += written;
      cachedUpTo = prefixTokens[index]!;
      this.#breakpoints.set(hashes[index]!, now + ttlMs[ttl]);
    }
    return usage;
  }
}

/** Words of a text: the fake's token count (conversation.ts counts the same way). */
function words(text: string): number {
  return text.split(/\s+/).filter((word) => word.length > 0).length;
}

/** Tokens the fake bills per image (conversation.ts's figure). */
const imageTokens = 85;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A block without its cache_control: where a breakpoint sits does not change what the prefix is. */
function identityOf(block: unknown): unknown {
  if (!isRecord(block)) return block;
  const { cache_control: _cacheControl, ...rest } = block;
  return rest;
}

/** The lifetime of a block's cache_control, when it has one (`ttl` absent is 5 minutes). */
function breakpointOf(block: unknown): CacheTtl | undefined {
  if (!isRecord(block) || !isRecord(block.cache_control)) return undefined;
  return block.cache_control.ttl === '1h' ? '1h' : '5m';
}

/** Tokens of one content block or part: its text's words, or an image's fixed figure. */
function blockTokens(block: unknown): number {
  if (!isRecord(block)) return 0;
  if (block.type === 'image' || block.type === 'image_url') return imageTokens;
  return typeof block.text === 'string' ? words(block.text) : 0;
}

/** The blocks of one message (or the system prompt): each content block, the first counting the message's 3 extra tokens. */
function messageBlocks(role: unknown, content: unknown, position: string): PromptBlock[] {
  if (!Array.isArray(content)) {
    return [{ identity: { position, role, content }, tokens: words(typeof content === 'string' ? content : '') + 3 }];
  }
  if (content.length === 0) return [{ identity: { position, role, content }, tokens: 3 }];
  return content.map((block: unknown, index) => {
    const breakpoint = breakpointOf(block);
    return {
      identity: { position, role, index, block: identityOf(block) },
      tokens: blockTokens(block) + (index === 0 ? 3 : 0),
      ...(breakpoint === undefined ? {} : { breakpoint }),
    };
  });
}

/**
 * An Anthropic request's prompt in cache order: tools (0 tokens each, as the fake bills no tool
 * definitions), then the system prompt, then each message's blocks. The tokens add up to the
 * fake's input count: words + 3 per message (and per system prompt) + 85 per image.
 */
export function anthropicPromptBlocks(request: Record<string, unknown>): PromptBlock[] {
  const blocks: PromptBlock[] = [];
  if (Array.isArray(request.tools)) {
    request.tools.forEach((tool: unknown, index) => {
      const breakpoint = breakpointOf(tool);
      blocks.push({ identity: { position: 'tools', index, tool: identityOf(tool) }, tokens: 0, ...(breakpoint === undefined ? {} : { breakpoint }) });
    });
  }
  if (typeof request.system === 'string' || Array.isArray(request.system)) blocks.push(...messageBlocks('system', request.system, 'system'));
  if (Array.isArray(request.messages)) {
    request.messages.forEach((message: unknown, index) => {
      if (isRecord(message)) blocks.push(...messageBlocks(message.role, message.content, `messages.${index}`));
    });
  }
  return blocks;
}

/**
 * An OpenAI chat request's prompt in cache order: its tools as one block of 0 tokens (the fake
 * bills none), then one block per message of words + 3 + 85 per image tokens (the fake's count).
 */
export function openAiPromptBlocks(request: Record<string, unknown>): PromptBlock[] {
  const blocks: PromptBlock[] = [{ identity: { tools: request.tools ?? null }, tokens: 0 }];
  if (Array.isArray(request.messages)) {
    request.messages.forEach((message: unknown) => {
      if (!isRecord(message)) return;
      const parts = Array.isArray(message.content) ? message.content : [message.content];
      const tokens = parts.reduce((sum: number, part: unknown) => sum + (typeof part === 'string' ? words(part) : blockTokens(part)), 3);
      blocks.push({ identity: message, tokens });
    });
  }
  return blocks;
}
