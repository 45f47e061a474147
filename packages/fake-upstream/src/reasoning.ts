import { createHmac, timingSafeEqual } from 'node:crypto';

// The fake upstream's reasoning, driven by the request's reasoning fields: OpenAI-compatible
// `reasoning_effort` gives `reasoning_content` (message and deltas) with
// `completion_tokens_details.reasoning_tokens`; Anthropic `thinking` (enabled or adaptive) gives a
// signed thinking block first, whose signature the fake verifies when a later turn sends it back,
// refusing a wrong one with a 400 as Anthropic does. Reasoning words are `r1 r2 … rN`, one token each.

/** Words of reasoning per OpenAI effort level (anything else, e.g. "none": no reasoning). */
const wordsByEffort: Readonly<Record<string, number>> = { minimal: 2, low: 4, medium: 8, high: 12, xhigh: 16 };

/** Words of an Anthropic thinking block: a budget's thousands (1024 → 1), at least 3, at most 12; adaptive: 6. */
function thinkingWords(thinking: Record<string, unknown>): number {
  if (thinking.type === 'adaptive') return 6;
  const budget = typeof thinking.budget_tokens === 'number' ? thinking.budget_tokens : 0;
  return Math.max(3, Math.min(12, Math.floor(budget / 1024) + 2));
}

/** The secret the fake signs thinking with: a vendor's own, never known to the gateway. */
const signingSecret = 'fake-vendor-thinking-signing-secret';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `r1 r2 … rN`. */
function reasoningWords(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `r${i + 1}`);
}

/** The signature of a thinking text: shaped like a vendor's (base64 of a MAC), never the gateway's. */
export function fakeThinkingSignature(thinking: string): string {
  return `EqQB${createHmac('sha256', signingSecret).update(thinking).digest('base64')}`;
}

/** The data of the fake's redacted thinking block: the text encrypted in the vendor's way (here, signed base64). */
function redactedData(text: string): string {
  return `${Buffer.from(text).toString('base64')}.${createHmac('sha256', signingSecret).update(`redacted:${text}`).digest('base64url')}`;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** The reasoning words an OpenAI-compatible request asks for through `reasoning_effort`; empty for none. */
export function openAiReasoningWords(body: Record<string, unknown>): string[] {
  const effort = body.reasoning_effort;
  return typeof effort === 'string' ? reasoningWords(wordsByEffort[effort] ?? 0) : [];
}

/** The thinking an Anthropic request asks for (`thinking` enabled or adaptive): its words and whether to redact it (`[[fake:redacted_thinking]]`). */
export function anthropicThinking(request: Record<string, unknown>, lastUserText: string): { words: string[]; redacted: boolean } | undefined {
  const thinking = request.thinking;
  if (!isObject(thinking) || (thinking.type !== 'enabled' && thinking.type !== 'adaptive')) return undefined;
  return { words: reasoningWords(thinkingWords(thinking)), redacted: lastUserText.includes('[[fake:redacted_thinking]]') };
}

/** The content blocks of a thinking answer, before its text or tool use. */
export function thinkingBlocks(thinking: { words: string[]; redacted: boolean }): Array<Record<string, unknown>> {
  const text = thinking.words.join(' ');
  if (thinking.redacted) return [{ type: 'redacted_thinking', data: redactedData(text) }];
  return [{ type: 'thinking', thinking: text, signature: fakeThinkingSignature(text) }];
}

/** The stream events of a thinking answer's blocks (from index 0), as Anthropic streams them: thinking_delta per word, then signature_delta. */
export function thinkingStreamEvents(thinking: { words: string[]; redacted: boolean }, event: (type: string, data: object) => string): string[] {
  const text = thinking.words.join(' ');
  if (thinking.redacted) {
    return [
      event('content_block_start', { index: 0, content_block: { type: 'redacted_thinking', data: redactedData(text) } }),
      event('content_block_stop', { index: 0 }),
    ];
  }
  return [
    event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
    ...thinking.words.map((word, i) => event('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: i === 0 ? word : ` ${word}` } })),
    event('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: fakeThinkingSignature(text) } }),
    event('content_block_stop', { index: 0 }),
  ];
}

/**
 * Why Anthropic would refuse the thinking blocks of a request's assistant turns, or undefined:
 * a thinking block whose signature is not the one the fake gave its text, a redacted block whose
 * data it did not make, or thinking that is not at the start of its turn.
 */
export function invalidThinkingBlocks(messages: readonly unknown[]): string | undefined {
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index];
    if (!isObject(message) || message.role !== 'assistant' || !Array.isArray(message.content)) continue;
    let sawOther = false;
    for (let blockIndex = 0; blockIndex < message.content.length; blockIndex += 1) {
      const block: unknown = message.content[blockIndex];
      if (!isObject(block)) continue;
      const path = `messages.${index}.content.${blockIndex}`;
      if (block.type === 'thinking' || block.type === 'redacted_thinking') {
        if (sawOther) return `${path}: thinking blocks must come first in an assistant turn`;
        if (block.type === 'thinking') {
          if (typeof block.thinking !== 'string' || typeof block.signature !== 'string' || !sameText(block.signature, fakeThinkingSignature(block.thinking))) {
            return `${path}: Invalid \`signature\` in \`thinking\` block`;
          }
        } else {
          const data = typeof block.data === 'string' ? block.data : '';
          const text = Buffer.from(data.split('.')[0] ?? '', 'base64').toString('utf8');
          if (!sameText(data, redactedData(text))) return `${path}: Invalid \`data\` in \`redacted_thinking\` block`;
        }
      } else {
        sawOther = true;
      }
    }
  }
  return undefined;
}
