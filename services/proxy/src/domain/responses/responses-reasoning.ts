import { GatewayError } from '@gateway/errors';
import { z } from 'zod';
import type { ChatRequest } from '../chat-request.ts';
import type { ReasoningBlock } from '../reasoning.ts';
import type { ReasoningSeal } from '../reasoning-seal.ts';

// Reasoning on the Responses surface (docs/surfaces/responses.md, "Reasoning"): a `reasoning`
// output item before the answer, with the model's reasoning as its summary when the request asked
// for one (`reasoning.summary`), and, with `include: ["reasoning.encrypted_content"]`, the
// reasoning sealed under the gateway's key (the upstream's blocks, signatures included), which a
// stateless client (Codex, store: false) sends back as an input item on its next turn.

/** What a Responses request asked to be shown of the model's reasoning. */
export interface ReasoningOutputOptions {
  /** `reasoning.summary` was set: the reasoning item carries the reasoning text as its summary. */
  summary: boolean;
  /** `include` names `reasoning.encrypted_content`: the item carries it. */
  encrypted: boolean;
}

/** A `summary_text` part of a reasoning item. */
interface SummaryText {
  type: 'summary_text';
  text: string;
}

/** A `reasoning` output item, as OpenAI's Responses API shapes it. */
export interface ReasoningItem {
  id: string;
  type: 'reasoning';
  summary: SummaryText[];
  /** The sealed reasoning, only when the request included it. */
  encrypted_content?: string;
}

/** The text of reasoning blocks (redacted ones have none to show). */
function textOf(blocks: readonly ReasoningBlock[]): string {
  return blocks.map((block) => (block.type === 'thinking' ? block.thinking : '')).join('');
}

/**
 * A reasoning item for blocks (their signatures already sealed for the client): the summary when
 * asked (one summary_text part, none when the text is empty), the encrypted content when included.
 */
export function reasoningItemOf(id: string, blocks: readonly ReasoningBlock[], options: ReasoningOutputOptions, seal: ReasoningSeal | undefined): ReasoningItem {
  const text = textOf(blocks);
  const item: ReasoningItem = { id, type: 'reasoning', summary: options.summary && text !== '' ? [{ type: 'summary_text', text }] : [] };
  if (options.encrypted && seal !== undefined) item.encrypted_content = seal.seal(JSON.stringify(blocks));
  return item;
}

const sealedBlocksSchema = z.array(z.discriminatedUnion('type', [
  z.object({ type: z.literal('thinking'), thinking: z.string(), signature: z.string() }),
  z.object({ type: z.literal('redacted_thinking'), data: z.string() }),
])).max(64);

/** A reasoning input item's encrypted content, to be attached to the assistant message it precedes. */
export interface EncryptedReasoningInput {
  /** Index of the assistant message in the chat form's messages. */
  messageIndex: number;
  encryptedContent: string;
  /** The client's name of the field, e.g. `input[3].encrypted_content`. */
  param: string;
}

/**
 * The chat request with the reasoning of earlier turns (sent back as reasoning items' encrypted
 * content) attached to the assistant messages they precede, as blocks whose signatures are still
 * sealed (planChat opens them). Content this gateway did not seal, or altered, is a 400 naming it,
 * before the Reserve.
 */
export function attachEncryptedReasoning(chat: ChatRequest, inputs: readonly EncryptedReasoningInput[], seal: ReasoningSeal | undefined): ChatRequest {
  if (inputs.length === 0) return chat;
  const messages = [...chat.messages];
  for (const input of inputs) {
    const opened = seal?.open(input.encryptedContent);
    const parsed = opened === undefined ? undefined : sealedBlocksSchema.safeParse(safeJson(opened));
    if (parsed === undefined || !parsed.success) {
      throw new GatewayError('invalid_request', {
        param: input.param,
        publicMessage: `Invalid ${input.param}: it is not reasoning this gateway returned, or it was altered or sealed under an earlier key. Send it back exactly as returned.`,
      });
    }
    const message = messages[input.messageIndex];
    if (message === undefined) continue;
    messages[input.messageIndex] = { ...message, reasoning: [...(message.reasoning ?? []), ...parsed.data] };
  }
  return { ...chat, messages };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
