import { GatewayError } from '@gateway/errors';
import type { ChatMessage, ChatRequest } from './chat-request.ts';
import type { NormalizedCompletion, StreamChoice } from './normalized-completion.ts';
import type { ReasoningBlock } from './reasoning.ts';
import type { ToolCallIdCodec } from './tool-call-ids.ts';

// Reasoning signatures and redacted thinking cross the gateway sealed (domain/reasoning-seal.ts):
// sealed on the way out (completions and stream chunks), opened on the way back (the reasoning
// of earlier assistant turns), in the same places tool-call ids are concealed and revealed.

/** A block with its signature or data sealed (out) or opened (back); undefined when it does not open. */
function mapBlock(block: ReasoningBlock, map: (token: string) => string | undefined): ReasoningBlock | undefined {
  if (block.type === 'thinking') {
    // An unsigned block (an upstream that signs nothing) stays unsigned both ways.
    if (block.signature === '') return block;
    const signature = map(block.signature);
    return signature === undefined ? undefined : { ...block, signature };
  }
  const data = map(block.data);
  return data === undefined ? undefined : { ...block, data };
}

/**
 * The request with the reasoning of earlier assistant turns opened to the upstream's own
 * signatures and data; the request itself when it carries none. A sealed token that does not
 * open (altered, or sealed under another key) is a 400 naming the message, before the Reserve:
 * the upstream would refuse it anyway, after money was held.
 */
export function openReasoning(request: ChatRequest, codec: ToolCallIdCodec): ChatRequest {
  const seal = codec.reasoning;
  if (seal === undefined || !request.messages.some((message) => message.reasoning !== undefined)) return request;
  const messages = request.messages.map((message, i): ChatMessage => {
    if (message.reasoning === undefined) return message;
    const reasoning = message.reasoning.map((block) => {
      const opened = mapBlock(block, (token) => seal.open(token));
      if (opened === undefined) {
        throw new GatewayError('invalid_request', {
          param: `messages[${i}].reasoning`,
          publicMessage: 'A thinking signature or redacted thinking block was not issued by this gateway, or was altered. Send reasoning back exactly as it was returned.',
        });
      }
      return opened;
    });
    return { ...message, reasoning };
  });
  return { ...request, messages };
}

/** The completion with every reasoning signature and redacted block sealed for the client. */
export function sealCompletionReasoning(completion: NormalizedCompletion, codec: ToolCallIdCodec): NormalizedCompletion {
  const seal = codec.reasoning;
  if (seal === undefined || !completion.choices.some((choice) => choice.reasoning !== undefined)) return completion;
  return {
    ...completion,
    choices: completion.choices.map((choice) => (choice.reasoning === undefined ? choice : {
      ...choice,
      reasoning: choice.reasoning.map((block) => mapBlock(block, (token) => seal.seal(token))!),
    })),
  };
}

/** Seals, in place, the signatures and redacted data of one decoded stream chunk (the decoder's fresh objects). */
export function sealStreamReasoning(choices: readonly StreamChoice[], codec: ToolCallIdCodec): void {
  const seal = codec.reasoning;
  if (seal === undefined) return;
  for (const choice of choices) {
    const { delta } = choice;
    if (delta.reasoning_signature !== undefined && delta.reasoning_signature !== '') delta.reasoning_signature = seal.seal(delta.reasoning_signature);
    if (delta.redacted_reasoning !== undefined) delta.redacted_reasoning = seal.seal(delta.redacted_reasoning);
  }
}

/** All reasoning text of a completion's choices: counted as completion tokens when the upstream reports none. */
export function reasoningTextOf(reasoning: readonly ReasoningBlock[] | undefined): string {
  if (reasoning === undefined) return '';
  let text = '';
  for (const block of reasoning) if (block.type === 'thinking') text += block.thinking;
  return text;
}
