import type { GatewayModelEntry } from './config-snapshot.ts';
import type { UsageSource } from './ledger-port.ts';
import { costMicros, customerCostMicros, sheetOf, type TokenUsage } from './pricing.ts';
import { countTextTokens } from './token-estimate.ts';

/** How a stream ended (the log's `streamOutcome`). */
export type StreamEnding = 'completed' | 'cost_stop' | 'client_closed' | 'shutdown' | 'upstream_failed' | 'upstream_timeout';

/** The usage a stream is settled at, and where its counts come from. */
export interface BilledUsage {
  usage: TokenUsage;
  source: UsageSource;
  /**
   * Set when the upstream reported a usage whose cost passes the Reserve (it counted more than
   * the gateway estimated, e.g. a prompt it bills beyond the estimate): what it produced, priced
   * as provider cost only; `usage` is then the estimate the Reserve covers (BOUNDED_OVERRUN).
   */
  producedUsage?: TokenUsage;
}

/** A checkpoint the meter asks for: its sequence and the running usage so far (EXPIRY). */
export interface CheckpointDue {
  sequence: bigint;
  usage: TokenUsage;
}

/** What a stream is metered against. */
export interface StreamMeterOptions {
  /** Prices (µ₹ per million tokens) and tokenizer of the Gateway Model. */
  model: Pick<GatewayModelEntry, 'tokenizer' | 'inputPriceMicrosPerMtok' | 'outputPriceMicrosPerMtok' | 'priceSheet'>;
  /** The gateway's estimate of the prompt, tokens. */
  promptTokens: number;
  /** The Reserve held for the request, µ₹: the running cost never passes it (BOUNDED_OVERRUN). */
  reserveMicros: bigint;
  /** After the first checkpoint, at most one per this many ms. */
  checkpointIntervalMs: number;
}

/** Zero tokens: what a stream that delivered nothing is settled at. */
const nothing: TokenUsage = { promptTokens: 0, completionTokens: 0 };

/**
 * The money side of one streamed completion, with no I/O in it: fed the decoded chunks' text and
 * the upstream's usage, it keeps the running cost and the delivered text, refuses the chunk that
 * would take the cost past the Reserve (BOUNDED_OVERRUN), says when a checkpoint is due (EXPIRY),
 * and at the end gives the usage to settle (NOTHING_FREE). The relay asks it before every chunk
 * and moves bytes; the meter is the same in both billing modes: in INTERNAL_MODE the Reserve
 * still bounds the stream (a Project Budget applies) and the usage is still recorded.
 */
export class StreamMeter {
  readonly #options: StreamMeterOptions;
  /** ceil(prompt × input price): constant over the stream. */
  readonly #promptCostMicros: bigint;
  /** The texts delivered, joined and counted once at the end (a token can straddle two chunks). */
  readonly #deliveredTexts: string[] = [];
  /** Sum of each delivered chunk's own count: the running figure the cost check and checkpoints use. */
  #runningCompletionTokens = 0;
  #chunksDelivered = 0;
  #finishSeen = false;
  #upstreamUsage: TokenUsage | undefined;
  /** The highest price an output token can be billed at, µ₹ per million tokens: max(output, reasoning). */
  #outputPriceMicrosPerMtok: bigint;
  #checkpointSequence = 0n;
  #lastCheckpointAtMs = 0;
  #checkpointInFlight = false;

  /** A meter with nothing delivered yet. */
  constructor(options: StreamMeterOptions) {
    this.#options = options;
    // At the Reserve's prices (the highest a prompt or output token can be billed at):
    // a stream stopped here fits its Reserve whatever classes the upstream reports at the end.
    const sheet = sheetOf(options.model);
    this.#promptCostMicros = costMicros(options.promptTokens, sheet.reserveInput);
    this.#outputPriceMicrosPerMtok = sheet.reserveOutput;
  }

  /**
   * Asks to deliver one chunk whose completion text is `text` (`finishes`: it carries a finish
   * reason). False: its tokens would take the running cost (prompt estimate + tokens delivered)
   * past the Reserve, so it must not be relayed and the stream ends as `cost_stop`. True: it is
   * counted as delivered.
   */
  deliver(text: string, finishes: boolean): boolean {
    let tokens = 0;
    if (text.length > 0) {
      const { model, reserveMicros } = this.#options;
      tokens = countTextTokens(text, model.tokenizer);
      if (this.#promptCostMicros + costMicros(this.#runningCompletionTokens + tokens, this.#outputPriceMicrosPerMtok) > reserveMicros) return false;
    }
    this.#chunksDelivered += 1;
    this.#runningCompletionTokens += tokens;
    if (tokens > 0) this.#deliveredTexts.push(text);
    if (finishes) this.#finishSeen = true;
    return true;
  }

  /** Records the usage the upstream reported for the whole request. */
  reportUsage(usage: TokenUsage): void {
    this.#upstreamUsage = usage;
  }

  /** True once any chunk went to the client. */
  get delivered(): boolean {
    return this.#chunksDelivered > 0;
  }

  /** How a stream whose upstream closed without [DONE] ended: completed if a finish reason came, else a failure. */
  /** The output tokens the upstream reported producing so far (its usage), 0 when it reported none: what a broken attempt may have cost. */
  reportedOutputTokens(): number {
    return this.#upstreamUsage?.completionTokens ?? 0;
  }

  endingAtClose(): 'completed' | 'upstream_failed' {
    return this.#finishSeen ? 'completed' : 'upstream_failed';
  }

  /**
   * The checkpoint due at `nowMs`, if any: the first once content has been delivered, then one
   * per interval, never two in flight (a proxy killed mid-stream loses at most one interval of
   * delivered output). The caller sends it and calls checkpointSettled() when it is answered.
   */
  checkpointDue(nowMs: number): CheckpointDue | undefined {
    if (this.#checkpointInFlight || this.#runningCompletionTokens === 0) return undefined;
    if (this.#checkpointSequence > 0n && nowMs - this.#lastCheckpointAtMs < this.#options.checkpointIntervalMs) return undefined;
    this.#lastCheckpointAtMs = nowMs;
    this.#checkpointSequence += 1n;
    this.#checkpointInFlight = true;
    return { sequence: this.#checkpointSequence, usage: { promptTokens: this.#options.promptTokens, completionTokens: this.#runningCompletionTokens } };
  }

  /** The checkpoint in flight was answered (or failed): the next may go out. */
  checkpointSettled(): void {
    this.#checkpointInFlight = false;
  }

  /**
   * The usage to settle for how the stream ended (NOTHING_FREE). Completed: the upstream's usage,
   * else the gateway's estimate. Cost stop: the estimate, which the cost check kept within the
   * Reserve. Any other ending: the upstream's usage when it arrived, else nothing when no chunk
   * went out, else the estimate of what was delivered. The estimate is the prompt estimate plus
   * the delivered text counted once as a whole.
   */
  bill(ending: StreamEnding): BilledUsage {
    if (ending === 'cost_stop') return this.#estimate();
    if (this.#upstreamUsage !== undefined) {
      // BOUNDED_OVERRUN, as a non-streaming reply is held to its Reserve: the client pays at most
      // what the Reserve covers, and what the upstream counted beyond it is provider cost only.
      if (customerCostMicros(this.#upstreamUsage, this.#options.model) > this.#options.reserveMicros) return { ...this.#estimate(), producedUsage: this.#upstreamUsage };
      return { usage: this.#upstreamUsage, source: 'upstream' };
    }
    if (ending !== 'completed' && this.#chunksDelivered === 0) return { usage: nothing, source: 'gateway_estimate' };
    return this.#estimate();
  }

  #estimate(): BilledUsage {
    const completionTokens = countTextTokens(this.#deliveredTexts.join(''), this.#options.model.tokenizer);
    return { usage: { promptTokens: this.#options.promptTokens, completionTokens }, source: 'gateway_estimate' };
  }
}
