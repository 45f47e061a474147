import { Hold } from '../billing/hold.ts';
import type { SettleOverrun } from '../domain/pricing.ts';
import { StreamMeter, type BilledUsage, type StreamEnding } from '../domain/stream-meter.ts';
import type { StreamRenderer } from '../domain/stream-renderer.ts';
import { sealStreamReasoning } from '../domain/reasoning-blocks.ts';
import { createStreamToolCallIdConcealer } from '../domain/tool-call-ids.ts';
import { streamFailureError } from '../domain/upstream-failure.ts';
import type { UpstreamMetricOutcome } from '../telemetry/request-labels.ts';
import { SseParser } from '../upstreams/sse/sse-parser.ts';
import type { StreamChoice, StreamEvent, UpstreamAdapter } from '../upstreams/upstream-adapter.ts';
import type { UpstreamStream, UpstreamStreamOutcome } from '../upstreams/upstream-outcome.ts';
import { elapsedMs } from '../telemetry/elapsed-ms.ts';
import { planChat, type ChatInput, type ChatPlan } from './plan-chat.ts';
import { adapterOfDeployment, failedCallResult, runAttempts, type AttemptResult } from './attempts.ts';
import { upstreamFailureOutcome, type CompleteChatDeps } from './complete-chat.ts';

/** Where a stream's frames go: the HTTP response, behind a port so the relay has no transport in it. */
export interface StreamSink {
  /** Sends the 200 and the SSE headers; called once, right before the first frame. */
  open(): void;
  /** Writes one frame; true (or a promise of it, once the client has drained) while the client is there. */
  write(frame: string): boolean | Promise<boolean>;
  /** True while the client is there and the response not ended (what write() would say, without writing). */
  isOpen(): boolean;
  /** Ends the response, after writing `frames` (the last ones) in the same write when given. */
  end(frames?: string): void;
}

/** Why a relay was told to stop from outside: the client went away, or the process is shutting down. */
export type StreamStopReason = 'client_closed' | 'shutdown';

/** The metrics outcome of a stream's upstream call by how the stream ended: `aborted` when the gateway cut it. */
const upstreamOutcomeOfEnding: Record<StreamEnding, UpstreamMetricOutcome> = {
  completed: 'ok',
  cost_stop: 'aborted',
  client_closed: 'aborted',
  shutdown: 'aborted',
  upstream_failed: 'bad_response',
  upstream_timeout: 'timeout',
};

/** What streamChat needs besides the request. */
export interface StreamChatDeps extends CompleteChatDeps {
  /** A stream's reservation is a lease of this long from the ledger's clock, renewed by each checkpoint, ms (PROXY_STREAM_LEASE_MS). */
  streamLeaseMs: number;
  /**
   * A running stream checkpoints its usage on its first content chunk and then once per this
   * many ms, with or without new tokens (each renews its lease, PROXY_STREAM_LEASE_MS), ms.
   */
  checkpointIntervalMs: number;
}

/** One streaming completion to run. */
export interface StreamChatInput extends ChatInput {
  sink: StreamSink;
  /** What the events look like on the request's surface (chat chunks, Responses events, Anthropic events). */
  renderer: StreamRenderer;
  /** Aborted with a StreamStopReason when the client goes away or shutdown cuts the stream. */
  stop: AbortSignal;
}

/**
 * Runs one streaming chat completion on any surface: plan and Reserve as for any completion,
 * then relays the upstream's SSE chunk by chunk (each rebuilt from the adapter's allowlist and
 * rendered in the request's surface by its renderer, with the gateway's ids and the Gateway
 * Model slug), never buffering more than one upstream read. The money is
 * the stream meter's (domain/stream-meter.ts), asked before each chunk:
 *
 * - when the next chunk would take the running cost past the Reserve the stream ends cleanly
 *   (`finish_reason: "length"`, then `[DONE]`) and the upstream is aborted (BOUNDED_OVERRUN);
 * - a stream checkpoints its running usage on its first content chunk and then every
 *   `checkpointIntervalMs`, also while the upstream sends nothing, each checkpoint renewing its
 *   reservation's lease (EXPIRY): a live stream never outlives its hold, a dead proxy's stream
 *   holds for at most one lease after its last checkpoint;
 * - every ending settles exactly once, at the usage the meter bills (NOTHING_FREE). A failure
 *   before the first byte is an ordinary 502/504.
 */
export async function streamChat(deps: StreamChatDeps, input: StreamChatInput): Promise<void> {
  const { log, observer } = input;
  const plan = planChat(input, deps.routing);
  const hold = await Hold.open(deps, input, plan.amountMicros);

  // One attempt per deployment until one streams (runAttempts): an attempt whose stream failed
  // before anything was written to the client goes on to the next deployment; once a frame went
  // out, the stream is the client's and ends as it ends (no failover after the first byte).
  await runAttempts(deps.routing, input.model, hold, plan.route, async (deployment, request, limits): Promise<AttemptResult<void>> => {
    // planRoute built this deployment's request with its adapter, so it has one.
    const adapter = adapterOfDeployment(input.adapter, deployment)!;
    let opened: UpstreamStreamOutcome;
    const upstreamStartedAtMs = performance.now();
    observer.upstreamStarted(deployment.upstream.providerKind);
    try {
      // The stop signal cuts the upstream call itself (client gone, shutdown); the relay's own
      // endings cut it through the stream's abort().
      opened = await deps.upstream.openStream(deployment.upstream, request, input.stop, limits);
    } catch (error) {
      opened = { kind: 'unreachable', reason: error instanceof Error ? error.name : 'unknown' };
    }
    log.upstreamMs = elapsedMs(upstreamStartedAtMs);
    if (opened.kind !== 'stream') {
      log.upstreamOutcome = opened.kind;
      const stopped = opened.kind === 'failed' && input.stop.aborted;
      observer.upstreamEnded(stopped ? 'aborted' : upstreamFailureOutcome(opened.kind));
      const failed = opened;
      return failedCallResult(failed, plan.promptTokens, input.stop.aborted, () => Promise.reject(hold.fail(failed)));
    }
    log.upstreamOutcome = 'stream';
    log.upstreamStatus = opened.stream.statusCode;
    let relayed: Relayed;
    try {
      relayed = await relay(deps, input, plan, hold, opened.stream, adapter);
    } finally {
      opened.stream.close();
      // The relay reports how the call ended; one that threw before deciding leaves a cut call (a no-op otherwise).
      observer.upstreamEnded('aborted');
    }
    const { ending, meter, left } = relayed;
    const finish = () => endStream(input, hold, ending, meter.bill(ending), left);
    if (ending !== 'upstream_failed' && ending !== 'upstream_timeout') {
      await finish();
      return { kind: 'answered', value: undefined };
    }
    return {
      kind: 'failed',
      outcome: ending === 'upstream_timeout' ? 'timeout' : 'stream_broken',
      // Nothing written to the client yet: the next deployment may still answer it whole.
      retryable: !left.opened && !input.stop.aborted,
      billable: { outcome: 'stream_broken', usage: { promptTokens: plan.promptTokens, completionTokens: meter.reportedOutputTokens() } },
      giveUp: finish,
    };
  });
}

/** What a stream's Settle carries beyond its usage when the upstream counted more than the Reserve covers (BOUNDED_OVERRUN). */
function overrunOf(billed: BilledUsage): SettleOverrun | undefined {
  if (billed.producedUsage === undefined) return undefined;
  return { producedUsage: billed.producedUsage, overrunOutputTokens: Math.max(0, billed.producedUsage.completionTokens - billed.usage.completionTokens) };
}

/** True when any choice of a chunk carries a finish reason. */
function finishes(choices: StreamChoice[]): boolean {
  for (const choice of choices) if (choice.finish_reason !== null) return true;
  return false;
}

/** How a relay ended: its ending, its meter (what to bill), and what it leaves for the ending's frames. */
interface Relayed {
  ending: StreamEnding;
  meter: StreamMeter;
  left: RelayLeftover;
}

/**
 * Moves the stream's bytes: upstream reads in, SSE frames out, asking the meter before each
 * chunk whether it may go and after each read whether a checkpoint is due; returns how it
 * ended, for the caller to write the ending and settle it, or (a failure before any frame went
 * out) to try the next deployment.
 */
async function relay(deps: StreamChatDeps, input: StreamChatInput, plan: ChatPlan, hold: Hold, stream: UpstreamStream, adapter: UpstreamAdapter): Promise<Relayed> {
  const { model, log, sink, renderer } = input;
  const meter = new StreamMeter({ model, promptTokens: plan.promptTokens, reserveMicros: plan.amountMicros, checkpointIntervalMs: deps.checkpointIntervalMs });

  const decoder = adapter.createStreamDecoder();
  let opened = false;
  let ending: StreamEnding | undefined;
  let failureReason = '';

  const maybeCheckpoint = () => {
    const due = meter.checkpointDue(Date.now());
    if (due === undefined) return;
    log.checkpoints = Number(due.sequence);
    deps.background(hold.checkpoint(due, deps.streamLeaseMs).finally(() => meter.checkpointSettled()));
  };

  // The frames of the events decoded from one upstream read go out in one write: one pass
  // through the HTTP response and one chunk of its framing instead of one per event (profiling
  // showed the per-frame writes as a large part of a stream's cost). The client gets the same
  // bytes no later: they are written before the next upstream read is awaited.
  let frames = '';
  /** Sends the head of the response and queues the surface's opening frames: once, before any other frame. */
  const open = () => {
    sink.open();
    opened = true;
    frames += renderer.start({ promptTokens: plan.promptTokens });
  };
  const flush = async (): Promise<boolean> => {
    if (frames === '') return true;
    const batch = frames;
    frames = '';
    return sink.write(batch);
  };
  // One gateway id per upstream tool-call id for the whole stream, however many fragments repeat it.
  const concealToolCallIds = createStreamToolCallIdConcealer(input.toolCallIds);
  /** Takes in one decoded event, queueing its frame; returns how the stream ends when it ends it. */
  const endingOf = (event: StreamEvent): StreamEnding | undefined => {
    switch (event.kind) {
      case 'usage':
        meter.reportUsage(event.usage);
        return undefined;
      case 'done':
        // Stop reading here: an upstream that keeps the connection open after [DONE] must not
        // turn a finished answer into an idle timeout.
        return 'completed';
      case 'error':
        failureReason = event.reason;
        return 'upstream_failed';
      case 'chunk':
      case 'text': {
        // A 'text' event is the common chunk: no finish reason, its choices already serialised by the decoder.
        const isText = event.kind === 'text';
        // BOUNDED_OVERRUN: a chunk that would take the running cost past the Reserve is not relayed.
        if (!meter.deliver(event.text, !isText && finishes(event.choices))) return 'cost_stop';
        if (!opened) open();
        if (isText) {
          frames += renderer.text(event.text, event.json);
        } else {
          concealToolCallIds(event.choices);
          sealStreamReasoning(event.choices, input.toolCallIds);
          frames += renderer.chunk(event.choices);
        }
        return undefined;
      }
    }
  };
  // Each event is taken in as the decoder yields it (no array of a read's events); the first one
  // that ends the stream decides, and the events after it in the same read are ignored.
  let decided: StreamEnding | undefined;
  const take = { push(event: StreamEvent): void { if (decided === undefined) decided = endingOf(event); } };
  const parser = new SseParser((event, data) => { decoder.decode(event, data, take); });
  /** Relays the events decoded from the bytes pushed since the last call; returns how the stream ends when one of them ends it. */
  const handleEvents = async (): Promise<StreamEnding | undefined> => {
    const decoded = decided;
    decided = undefined;
    // A clean ending writes its frames, its own frames and the end of the response in one
    // write (below); a client that is gone by then makes it client_closed, as a failed write
    // of those frames would have.
    if (decoded === 'completed' || decoded === 'cost_stop') return frames !== '' && !sink.isOpen() ? 'client_closed' : decoded;
    // The frames before any other ending are the client's (and billed as delivered): they go
    // out first, and a client that is gone by then makes the ending client_closed.
    if (!(await flush())) return 'client_closed';
    return decoded;
  };

  // Checkpoints also go out on a timer, so a stream whose upstream is silent for a while (a long
  // reasoning phase, a slow tool) keeps renewing its lease; the meter still sends at most one per
  // interval, never two at once. Half the interval keeps the gap between two at most 1.5 intervals.
  const renewal = setInterval(() => { if (opened && ending === undefined) maybeCheckpoint(); }, Math.max(1, Math.floor(deps.checkpointIntervalMs / 2)));
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
      ending = meter.endingAtClose();
      if (ending === 'upstream_failed') failureReason = 'stream ended before it finished';
    }
  } catch (error) {
    if (input.stop.aborted) {
      ending = input.stop.reason === 'shutdown' ? 'shutdown' : 'client_closed';
    } else {
      const failure = stream.failureOf(error);
      ending = failure.kind === 'timeout' ? 'upstream_timeout' : 'upstream_failed';
      failureReason = failure.reason;
    }
  } finally {
    clearInterval(renewal);
  }
  if (ending !== 'completed') stream.abort();
  log.streamOutcome = ending;
  input.observer.upstreamEnded(upstreamOutcomeOfEnding[ending]);

  // A clean ending opens the response if nothing did yet: its ending frames are the client's answer.
  if ((ending === 'completed' || ending === 'cost_stop') && !opened) open();
  return { ending, meter, left: { opened, frames, failureReason } };
}

/** What the relay leaves for the ending: whether the response was opened, its frames not yet written, and why the upstream failed. */
interface RelayLeftover {
  opened: boolean;
  frames: string;
  failureReason: string;
}

/**
 * Writes the ending the meter's figures call for and settles them: every ending settles exactly
 * once, at the usage the meter bills (NOTHING_FREE; ONE_OUTCOME).
 */
async function endStream(input: StreamChatInput, hold: Hold, ending: StreamEnding, billed: BilledUsage, left: RelayLeftover): Promise<void> {
  const { log, sink, renderer } = input;
  switch (ending) {
    case 'completed':
    case 'cost_stop': {
      // The frames of the last read and the ending's own frames go out in one write with the
      // end of the response (one pass through the HTTP framing instead of several).
      // Priced once: the closing usage frame shows the figures its Settle carries.
      const priced = hold.price(billed.usage, overrunOf(billed));
      const last = left.frames + renderer.close({ ending, usage: billed.usage, costMicros: priced.costMicros, costByClass: priced.costByClass });
      // Settled after the response (as completions are): the client does not wait for the commit.
      const settled = hold.settle(priced, billed.source);
      sink.end(last);
      await settled;
      return;
    }
    case 'client_closed':
      await hold.settle(hold.price(billed.usage, overrunOf(billed)), billed.source);
      return;
    case 'shutdown':
    case 'upstream_failed':
    case 'upstream_timeout': {
      const error = streamFailureError(ending, left.failureReason);
      const settled = hold.settle(hold.price(billed.usage, overrunOf(billed)), billed.source);
      if (!left.opened) {
        await settled;
        throw error; // nothing sent yet: an ordinary HTTP error
      }
      // The surface's in-stream error form, then the end.
      await sink.write(renderer.fail(error));
      sink.end();
      log.errorCode = error.code;
      log.errorDetail = error.message;
      await settled;
      return;
    }
  }
}
