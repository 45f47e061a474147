import type { GatewayError } from '@gateway/errors';
import type { StreamChoice } from './normalized-completion.ts';
import type { ClassUsage, TokenUsage } from './pricing.ts';

/** What the first frames of a stream may say: the Reserve's own figures, known before any upstream byte. */
interface StreamOpening {
  /** The gateway's estimate of the prompt, tokens (Anthropic's message_start reports input tokens up front). */
  promptTokens: number;
}

/** How a stream ended cleanly, and what it is billed. */
export interface StreamClose {
  /** completed: the upstream finished; cost_stop: the gateway ended it at its Reserve (BOUNDED_OVERRUN). */
  ending: 'completed' | 'cost_stop';
  /** The usage the Settle carries. */
  usage: TokenUsage;
  /** Its cost at the model's prices, µ₹: the Settle's own figure (usageCostMicros). */
  costMicros: bigint;
  /** The same by token class, when the usage has classes (pricing.ts costByClass). */
  costByClass?: readonly ClassUsage[] | undefined;
}

/**
 * Turns the gateway's internal stream events (chat chunk choices, tool-call ids already the
 * gateway's) into one API surface's SSE frames: chat completion chunks, Responses events or
 * Anthropic Messages events. The relay (inference/stream-chat.ts) owns the money and the
 * bytes; a renderer only says what each event looks like, and holds what its surface must
 * repeat at the end (a Responses `response.completed` carries the whole output).
 */
export interface StreamRenderer {
  /** The frames that open the stream; written with the first frames relayed (or the ending's, if none was). */
  start(opening: StreamOpening): string;
  /** The frames of one decoded chunk. */
  chunk(choices: StreamChoice[]): string;
  /** The frames of the common chunk: `text` is its content delta, `json` its chat choices array already serialised. */
  text(text: string, json: string): string;
  /** The last frames of a clean ending; the response ends right after them. */
  close(close: StreamClose): string;
  /** The frames of an error after the stream opened; the response ends right after them. */
  fail(error: GatewayError): string;
}
