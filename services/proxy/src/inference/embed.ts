import type { GatewayModelEntry } from '../domain/config-snapshot.ts';
import { inputItems, type EmbeddingsRequest } from '../domain/embeddings-request.ts';
import type { UsageSource } from '../domain/ledger-port.ts';
import { reserveMicros, usageCostMicros, type TokenUsage } from '../domain/pricing.ts';
import type { NormalizedEmbeddings, UpstreamEmbeddingsAdapter, UpstreamRequest } from '../upstreams/upstream-adapter.ts';
import type { UpstreamOutcome } from '../upstreams/upstream-transport.ts';
import {
  elapsedMs, holdReserve, settleFailedCall, settleUsage, type BillingInput, type BillingPlan, type SettleOverrun,
} from './chat-billing.ts';
import { upstreamFailureOutcome, type CompleteChatDeps } from './complete-chat.ts';

/** One embeddings call to run: who, which model, the validated request and the gateway's count of it. */
export interface EmbedInput extends BillingInput {
  /** The model's provider's embeddings translation. */
  embeddings: UpstreamEmbeddingsAdapter;
  request: EmbeddingsRequest;
  /** The input tokens in the model's tokenizer (countEmbeddingsTokens): what the Reserve is sized on. */
  inputTokens: number;
}

/** What the gateway decided for an embeddings call before any money moves. */
interface EmbeddingsPlan extends BillingPlan {
  inputTokens: number;
  upstreamRequest: UpstreamRequest;
}

/** An embeddings answer as it is delivered and billed, for the route to render. */
export interface CompletedEmbeddings {
  /** One vector per input, in the order of the inputs. */
  vectors: number[][];
  /** The usage the Settle carries (no completion tokens). */
  usage: TokenUsage;
  /** Its cost at the model's prices, µ₹: the Settle's own figure (usageCostMicros). */
  costMicros: bigint;
}

/** The usage an embeddings answer is billed at, and what the provider is paid for when that differs. */
interface BilledEmbeddings {
  usage: TokenUsage;
  source: UsageSource;
  overrun: SettleOverrun | undefined;
}

/**
 * The usage to settle for an embeddings answer, held to its Reserve (BOUNDED_OVERRUN): the
 * upstream's input tokens when it reports them and their cost fits the Reserve; the gateway's
 * own count otherwise (GATEWAY_ESTIMATE), which the Reserve was sized on and so always fits.
 * An answer cannot be cut like a reply (every vector is whole, and a batch missing vectors is
 * no answer), so when the upstream counts more than the Reserve covers (a tokenizer of its own,
 * special tokens per input) the client still gets every vector and pays the Reserve's count;
 * the provider cost is priced on what the upstream reported, so the difference shows as
 * provider cost, never the wallet's.
 */
export function billedEmbeddingsUsage(upstreamTokens: number | undefined, plan: { inputTokens: number; amountMicros: bigint }, model: GatewayModelEntry): BilledEmbeddings {
  const counted: TokenUsage = { promptTokens: plan.inputTokens, completionTokens: 0 };
  if (upstreamTokens === undefined) return { usage: counted, source: 'gateway_estimate', overrun: undefined };
  const reported: TokenUsage = { promptTokens: upstreamTokens, completionTokens: 0 };
  if (usageCostMicros(reported, model).costMicros <= plan.amountMicros) return { usage: reported, source: 'upstream', overrun: undefined };
  return { usage: counted, source: 'gateway_estimate', overrun: { producedUsage: reported, overrunOutputTokens: 0 } };
}

/**
 * The vectors of an answer in input order, or undefined unless it has exactly one per input, all
 * of one length, and that length is `dimensions` when the client asked for a size (a base64
 * vector decodes to whatever whole floats it holds, so its length is checked here).
 */
function vectorsInInputOrder(answer: NormalizedEmbeddings, inputCount: number, dimensions: number | undefined): number[][] | undefined {
  if (answer.data.length !== inputCount) return undefined;
  const length = dimensions ?? answer.data[0]?.embedding.length;
  const vectors = new Array<number[] | undefined>(inputCount);
  for (const { index, embedding } of answer.data) {
    if (index >= inputCount || vectors[index] !== undefined || embedding.length !== length) return undefined;
    vectors[index] = embedding;
  }
  return vectors as number[][];
}

/**
 * Runs one embeddings call with its money, as completeChat runs a completion: Reserve =
 * ceil(input tokens × input price / 1e6), at least 1 µ₹ (NO_OVERSPEND: held before the upstream
 * call, after the adapter's buildRequest, which may refuse the batch); the upstream call; then exactly one of Settle (the request may have reached the
 * upstream; NOTHING_FREE) or Release (it certainly did not), as settleFailedCall decides for a
 * failure. A usable answer (one vector per input) is handed to `respond` first and settled right
 * after with the upstream's input tokens, or the gateway's count when it reports none
 * (billedEmbeddingsUsage); the promise resolves once the settle has run.
 */
export async function embed(deps: CompleteChatDeps, input: EmbedInput, respond: (completed: CompletedEmbeddings) => void): Promise<void> {
  const { model, log, observer } = input;
  const plan: EmbeddingsPlan = {
    inputTokens: input.inputTokens,
    // reserveMicros with no output: the input side alone, and never below 1 µ₹.
    amountMicros: reserveMicros(input.inputTokens, 0, model),
    upstreamRequest: input.embeddings.buildRequest(model.upstream, {
      input: input.request.input, dimensions: input.request.dimensions, user: input.request.user,
    }),
    reservationId: `res_${input.requestUuid}`,
    carve: undefined,
  };
  await holdReserve(deps, input, plan);

  let outcome: UpstreamOutcome;
  const upstreamStartedAtMs = performance.now();
  observer.upstreamStarted(model.upstream.providerKind);
  try {
    outcome = await deps.upstream.send(model.upstream, plan.upstreamRequest);
  } catch (error) {
    outcome = { kind: 'unreachable', reason: error instanceof Error ? error.name : 'unknown' };
  }
  log.upstreamMs = elapsedMs(upstreamStartedAtMs);
  log.upstreamOutcome = outcome.kind;
  if (outcome.kind !== 'response') {
    observer.upstreamEnded(upstreamFailureOutcome(outcome.kind));
    throw settleFailedCall(deps, input, plan, outcome);
  }

  log.upstreamStatus = outcome.statusCode;
  let answer: NormalizedEmbeddings | undefined;
  let vectors: number[][] | undefined;
  try {
    answer = input.embeddings.parseResponse(outcome.json);
    vectors = vectorsInInputOrder(answer, inputItems(input.request.input).length, input.request.dimensions);
  } catch {
    vectors = undefined;
  }
  if (answer === undefined || vectors === undefined) {
    observer.upstreamEnded('bad_response');
    throw settleFailedCall(deps, input, plan, { kind: 'unusable_answer' });
  }
  observer.upstreamEnded('ok');

  const billed = billedEmbeddingsUsage(answer.promptTokens, plan, model);
  if (billed.overrun !== undefined) {
    deps.logger.info({
      requestId: input.requestId, upstreamInputTokens: answer.promptTokens, billedInputTokens: billed.usage.promptTokens,
    }, 'embeddings: the upstream counted more input tokens than the Reserve covers; the difference is provider cost');
  }
  const completed: CompletedEmbeddings = { vectors, usage: billed.usage, costMicros: usageCostMicros(billed.usage, model).costMicros };
  // The settle starts before the response is written, so it is in the outbox (a Settle in flight
  // of the organisation) before the client can possibly send its next request.
  const settled = settleUsage(deps, input, plan, billed.usage, billed.source, billed.overrun);
  respond(completed);
  await settled;
}
