import { ledgerV1 } from '@gateway/contracts';
import { GatewayError, toHttpError } from '@gateway/errors';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { costMicros, usageCostMicros, type TokenUsage } from '../domain/pricing.ts';
import { countTextTokens } from '../domain/token-estimate.ts';
import type { NormalizedUsage } from '../domain/normalized-completion.ts';
import { SseParser } from '../upstreams/sse/sse-parser.ts';
import type { StreamEvent } from '../upstreams/upstream-adapter.ts';
import type { UpstreamStream, UpstreamStreamOutcome } from '../upstreams/upstream-transport.ts';
import { elapsedMs, holdReserve, noUsage, planChat, settleUsage, type ChatInput, type ChatPlan } from './chat-billing.ts';
import { failedCallError, type CompleteChatDeps } from './complete-chat.ts';

/** Where a stream's frames go: the HTTP response, behind a port so the relay has no transport in it. */
export interface StreamSink {
  /** Sends the 200 and the SSE headers; called once, right before the first frame. */
  open(): void;
  /** Writes one frame; true (or a promise of it, once the client has drained) while the client is there. */
  write(frame: string): boolean | Promise<boolean>;
  /** Ends the response. */
  end(): void;
}

/** Why a relay was told to stop from outside: the client went away, or the process is shutting down. */
export type StreamStopReason = 'client_closed' | 'shutdown';

/** What streamChat needs besides the request. */
export interface StreamChatDeps extends CompleteChatDeps {
  /** A running stream checkpoints its usage on its first content chunk and then at most this often, ms. */
  checkpointIntervalMs: number;
  /** Shared across streams, so a ledger without Checkpoint is reported once, not once per stream. */
  checkpointNotes: { unimplementedReported: boolean };
}

/** One streaming completion to run. */
export interface StreamChatInput extends ChatInput {
  sink: StreamSink;
  /** Aborted with a StreamStopReason when the client goes away or shutdown cuts the stream. */
  stop: AbortSignal;
}

/** How a stream ended (the log's `streamOutcome`). */
type StreamEnding = 'completed' | 'cost_stop' | 'client_closed' | 'shutdown' | 'upstream_failed' | 'upstream_timeout';

/**
 * Runs one streaming chat completion: plan and Reserve as for any completion, then relays the
 * upstream's SSE chunk by chunk (each rebuilt from the adapter's allowlist with the gateway's
 * id and the Gateway Model slug as `model`), never buffering more than one event. Money:
 *
 * - the running cost (prompt estimate + tokens delivered so far) is checked before each chunk;
 *   when the next chunk would take it past the Reserve the stream ends cleanly
 *   (`finish_reason: "length"`, then `[DONE]`) and the upstream is aborted (law 6);
 * - a stream checkpoints its running usage on its first content chunk and then every
 *   `checkpointIntervalMs`, pushing the Reserve's deadline out (law 7);
 * - every ending settles exactly once: the upstream's usage when it arrived, otherwise the
 *   prompt estimate plus the tokens delivered; zero when nothing reached the client. A failure
 *   before the first byte is an ordinary 502/504.
 */
export async function streamChat(deps: StreamChatDeps, input: StreamChatInput): Promise<void> {
  const { model, log } = input;
  const plan = planChat(input);
  await holdReserve(deps, input, plan);

  const upstreamAbort = new AbortController();
  const onStop = () => upstreamAbort.abort();
  if (input.stop.aborted) onStop();
  else input.stop.addEventListener('abort', onStop, { once: true });

  let opened: UpstreamStreamOutcome;
  const upstreamStartedAtMs = performance.now();
  try {
    opened = await deps.upstream.openStream(model.upstream, plan.upstreamRequest, upstreamAbort.signal);
  } catch (error) {
    opened = { kind: 'unreachable', reason: error instanceof Error ? error.name : 'unknown' };
  }
  log.upstreamMs = elapsedMs(upstreamStartedAtMs);
  if (opened.kind !== 'stream') {
    input.stop.removeEventListener('abort', onStop);
    log.upstreamOutcome = opened.kind;
    throw failedCallError(deps, input, plan, opened);
  }
  log.upstreamOutcome = 'stream';
  log.upstreamStatus = opened.stream.statusCode;
  try {
    await relay(deps, input, plan, opened.stream, upstreamAbort);
  } finally {
    input.stop.removeEventListener('abort', onStop);
    opened.stream.close();
  }
}

async function relay(deps: StreamChatDeps, input: StreamChatInput, plan: ChatPlan, stream: UpstreamStream, upstreamAbort: AbortController): Promise<void> {
  const { model, log, request, sink } = input;
  const createdS = Math.floor(Date.now() / 1000);
  // Everything but `choices` is the gateway's own and the same in every chunk: serialised once.
  const head = `data: {"id":"chatcmpl-${input.requestUuid}","object":"chat.completion.chunk","created":${createdS},"model":${JSON.stringify(model.slug)},"choices":`;
  const tail = request.includeUsage ? ',"usage":null}\n\n' : '}\n\n';
  const promptCostMicros = costMicros(plan.promptTokens, model.inputPriceMicrosPerMtok);

  const events: StreamEvent[] = [];
  const decoder = input.adapter.createStreamDecoder();
  const parser = new SseParser((sse) => decoder.decode(sse.event, sse.data, events));
  const delivered: string[] = [];
  let runningCompletionTokens = 0;
  let upstreamUsage: NormalizedUsage | undefined;
  let finishSeen = false;
  let opened = false;
  let ending: StreamEnding | undefined;
  let failureReason = '';

  // The first checkpoint goes out with the first content delivered, then one per interval: a
  // proxy killed mid-stream loses at most one interval of delivered output (docs/decisions.md).
  const checkpoints = { sequence: 0n, lastAtMs: 0, inFlight: false };
  const maybeCheckpoint = () => {
    const nowMs = Date.now();
    if (checkpoints.inFlight || runningCompletionTokens === 0) return;
    if (checkpoints.sequence > 0n && nowMs - checkpoints.lastAtMs < deps.checkpointIntervalMs) return;
    checkpoints.lastAtMs = nowMs;
    checkpoints.sequence += 1n;
    checkpoints.inFlight = true;
    log.checkpoints = Number(checkpoints.sequence);
    const usage = { promptTokens: plan.promptTokens, completionTokens: runningCompletionTokens };
    deps.background(sendCheckpoint(deps, input, plan, checkpoints.sequence, usage).finally(() => { checkpoints.inFlight = false; }));
  };

  // The frames of the events decoded from one upstream read go out in one write: one pass
  // through the HTTP response and one chunk of its framing instead of one per event (profiling
  // showed the per-frame writes as a large part of a stream's cost). The client gets the same
  // bytes no later: they are written before the next upstream read is awaited.
  let frames = '';
  const flush = async (): Promise<boolean> => {
    if (frames === '') return true;
    const batch = frames;
    frames = '';
    return sink.write(batch);
  };
  /** Takes in the decoded events, queueing their frames; returns how the stream ends when one of them ends it. */
  const decodedEnding = (): StreamEnding | undefined => {
    for (let i = 0; i < events.length; i += 1) {
      const event = events[i]!;
      switch (event.kind) {
        case 'usage':
          upstreamUsage = event.usage;
          break;
        case 'done':
          // Stop reading here: an upstream that keeps the connection open after [DONE] must not
          // turn a finished answer into an idle timeout.
          return 'completed';
        case 'error':
          failureReason = event.reason;
          return 'upstream_failed';
        case 'chunk': {
          let tokens = 0;
          if (event.text.length > 0) {
            tokens = countTextTokens(event.text, model.tokenizer);
            // Law 6: a chunk that would take the running cost past the Reserve is not relayed.
            if (promptCostMicros + costMicros(runningCompletionTokens + tokens, model.outputPriceMicrosPerMtok) > plan.amountMicros) return 'cost_stop';
          }
          if (!opened) { sink.open(); opened = true; }
          runningCompletionTokens += tokens;
          if (tokens > 0) delivered.push(event.text);
          for (const choice of event.choices) if (choice.finish_reason !== null) finishSeen = true;
          frames += head + JSON.stringify(event.choices) + tail;
          break;
        }
      }
    }
    return undefined;
  };
  /** Relays the decoded events; returns how the stream ends when one of them ends it. */
  const handleEvents = async (): Promise<StreamEnding | undefined> => {
    const decoded = decodedEnding();
    events.length = 0;
    // The frames before an ending are the client's (and billed as delivered): they go out
    // first, and a client that is gone by then makes the ending client_closed, as a failed
    // write of any of them would have.
    if (!(await flush())) return 'client_closed';
    return decoded;
  };

  try {
    for await (const bytes of stream.body) {
      parser.push(bytes);
      ending = await handleEvents();
      if (ending !== undefined) break;
      if (opened) maybeCheckpoint();
    }
    if (ending === undefined) {
      parser.end();
      ending = await handleEvents();
    }
    if (ending === undefined) {
      // An upstream that closes after its finish reason without [DONE] still completed.
      if (finishSeen) ending = 'completed';
      else { ending = 'upstream_failed'; failureReason = 'stream ended before it finished'; }
    }
  } catch (error) {
    if (input.stop.aborted) {
      ending = input.stop.reason === 'shutdown' ? 'shutdown' : 'client_closed';
    } else {
      const failure = stream.failureOf(error);
      ending = failure.kind === 'timeout' ? 'upstream_timeout' : 'upstream_failed';
      failureReason = failure.reason;
    }
  }
  if (ending !== 'completed') upstreamAbort.abort();
  log.streamOutcome = ending;

  // What the client got: the upstream's usage when it arrived, else the prompt estimate plus the
  // tokens delivered (counted once over the whole text); nothing delivered, nothing billed.
  const deliveredUsage = (): { usage: TokenUsage; source: 'upstream' | 'gateway_estimate' } => {
    if (upstreamUsage !== undefined) return { usage: upstreamUsage, source: 'upstream' };
    if (!opened) return { usage: noUsage, source: 'gateway_estimate' };
    return { usage: { promptTokens: plan.promptTokens, completionTokens: countTextTokens(delivered.join(''), model.tokenizer) }, source: 'gateway_estimate' };
  };
  const usageFrame = (usage: TokenUsage) => `${head}[],"usage":${JSON.stringify({
    prompt_tokens: usage.promptTokens, completion_tokens: usage.completionTokens, total_tokens: usage.promptTokens + usage.completionTokens,
  })}}\n\n`;

  switch (ending) {
    case 'completed':
    case 'cost_stop': {
      // A completed stream is billed like a completion (the upstream's usage, else our count);
      // a cost stop by what was delivered, which the check above kept within the Reserve.
      const billed = ending === 'completed' && upstreamUsage !== undefined
        ? { usage: upstreamUsage, source: 'upstream' as const }
        : { usage: { promptTokens: plan.promptTokens, completionTokens: countTextTokens(delivered.join(''), model.tokenizer) }, source: 'gateway_estimate' as const };
      if (!opened) { sink.open(); opened = true; }
      if (ending === 'cost_stop') {
        await sink.write(`${head}[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length"}]${tail}`);
      }
      if (request.includeUsage) await sink.write(usageFrame(billed.usage));
      // Settled after the response (as completions are): the client does not wait for the commit.
      const settled = settleUsage(deps, input, plan, billed.usage, billed.source);
      await sink.write('data: [DONE]\n\n');
      sink.end();
      await settled;
      return;
    }
    case 'client_closed': {
      const billed = deliveredUsage();
      await settleUsage(deps, input, plan, billed.usage, billed.source);
      return;
    }
    case 'shutdown':
    case 'upstream_failed':
    case 'upstream_timeout': {
      const error = ending === 'shutdown'
        ? new GatewayError('service_unavailable', { internalMessage: 'stream cut by shutdown' })
        : new GatewayError(ending === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_error', { internalMessage: `upstream stream failed: ${failureReason}` });
      const billed = deliveredUsage();
      const settled = settleUsage(deps, input, plan, billed.usage, billed.source);
      if (!opened) {
        await settled;
        throw error; // nothing sent yet: an ordinary HTTP error
      }
      // OpenAI's in-stream error form: one data event with an `error` object, then the end.
      await sink.write(`data: ${JSON.stringify(toHttpError(error).body)}\n\n`);
      sink.end();
      log.errorCode = error.code;
      log.errorDetail = error.message;
      await settled;
      return;
    }
  }
}

/** Sends one checkpoint; failures are logged and never reach the stream. */
async function sendCheckpoint(deps: StreamChatDeps, input: StreamChatInput, plan: ChatPlan, sequence: bigint, usage: TokenUsage): Promise<void> {
  const { costMicros: cost, providerCostMicros } = usageCostMicros(usage, input.model);
  try {
    const response = await deps.ledger.checkpoint({
      reservationId: plan.reservationId,
      sequence,
      inputTokens: BigInt(usage.promptTokens),
      outputTokens: BigInt(usage.completionTokens),
      costMicros: cost,
      providerCostMicros,
      extendTtlMs: BigInt(deps.reserveTtlMs),
      // Kept on the usage record an expiry writes, so a stream whose proxy died is billed under its request id.
      requestId: input.requestId,
    });
    if (response.result !== ledgerV1.CheckpointResult.CHECKPOINT_RESULT_OK && response.result !== ledgerV1.CheckpointResult.CHECKPOINT_RESULT_ALREADY_RESOLVED) {
      deps.logger.warn({ requestId: input.requestId, reservationId: plan.reservationId, result: response.result, detail: response.detail }, 'checkpoint refused');
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === GrpcStatus.UNIMPLEMENTED) {
      if (!deps.checkpointNotes.unimplementedReported) {
        deps.checkpointNotes.unimplementedReported = true;
        deps.logger.warn('the ledger does not implement Checkpoint yet; long streams rely on RESERVE_TTL_MS alone');
      }
      return;
    }
    deps.logger.warn({ requestId: input.requestId, reservationId: plan.reservationId, err: { message: (error as Error).message } }, 'checkpoint failed');
  }
}
