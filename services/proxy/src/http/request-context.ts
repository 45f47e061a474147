import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toAnthropicHttpError, toGatewayError, toHttpError } from '@gateway/errors';
import { frameworkRequestError } from '@gateway/http-guard';
import { requestIdFrom, type Logger } from '@gateway/logger';
import type { ledgerV1 } from '@gateway/contracts';
import type { BillingLogFields } from '../billing/hold.ts';
import { requestLogSurface, requestRecordOf } from '../request-log/request-log-recorder.ts';
import type { ProxyTelemetry, RequestObserver } from '../telemetry/request-observer.ts';

/** What one request's log line says beyond method, path, status and duration. */
interface RequestLogFields extends BillingLogFields {
  organisationId?: string;
  projectId?: string;
  model?: string;
  /** How long the organisation's RPM check took, ms. */
  rateLimitMs?: number;
}

/** Per-request state shared by the middleware and the handlers. */
export interface RequestContext {
  /** The caller's sane `x-request-id`, or requestUuid; echoed in `x-request-id`. */
  requestId: string;
  /**
   * A UUID of ours, unique to this request even when a client reuses its request id: the
   * reservation id derives from it, so a repeated `x-request-id` can never turn a second
   * request into an idempotent replay of the first one's Reserve.
   */
  requestUuid: string;
  log: RequestLogFields;
  /** The handler's work; the log line waits for it even when the client hung up early. */
  work: Promise<void> | undefined;
  /** performance.now() when the request reached the proxy, ms: where its duration (metrics, log) starts. */
  startedAtMs: number;
  /** The request's metrics (and spans), set by a /v1 route's handler; undefined for probes and unmatched paths. */
  observer: RequestObserver | undefined;
}

const quietPaths = new Set(['/healthz', '/readyz']);

/**
 * The status a request is counted and logged with when its client went away before any answer
 * was sent (nginx's "client closed request"; the error catalogue has no code for it, since no
 * one receives an error: its error_code label is '').
 */
const clientClosedStatus = 499;

function bigintText(value: bigint | undefined): string | undefined {
  return value === undefined ? undefined : value.toString();
}

/** Starts a request's context: `path` is its target's path (without the query), for the log line and the metrics. */
export type RequestContextStarter = (req: IncomingMessage, res: ServerResponse, path: string) => RequestContext;

/**
 * Gives each request its id (echoed as `x-request-id`) and writes exactly one log line per
 * request once both the response and the handler's work are done. Headers and bodies are
 * never logged, so neither the API key nor the upstream credential can reach a log. When the
 * response is over, the request is counted: by its route's observer, or as `unmatched` when no
 * /v1 route took it (probes are not counted).
 */
export function requestContext(
  logger: Logger, isShuttingDown: () => boolean, telemetry: ProxyTelemetry, requestLog?: RequestLogSink,
): RequestContextStarter {
  return (req, res, path) => {
    const startedAtMs = performance.now();
    const header = req.headers['x-request-id'];
    const requestId = requestIdFrom(header);
    const requestUuid = typeof header === 'string' && header === requestId ? randomUUID() : requestId;
    const context: RequestContext = { requestId, requestUuid, log: {}, work: undefined, startedAtMs, observer: undefined };
    res.setHeader('x-request-id', requestId);
    // Keep-alive connections are not reused once shutdown starts, so the drain can finish.
    if (isShuttingDown()) res.setHeader('connection', 'close');

    res.once('close', () => {
      const endedAtMs = performance.now();
      const responseFinished = res.writableFinished;
      // A client gone before the answer's head left: Node's statusCode is then its default 200,
      // which would count a hang-up as a success. nginx's 499 says what happened instead.
      const status = res.headersSent ? res.statusCode : clientClosedStatus;
      const method = req.method ?? '';
      // Counted when the response is over (a stream: at its end), before its Settle may have been answered.
      if (context.observer !== undefined) context.observer.finish(status, context.log.errorCode);
      else if (!quietPaths.has(path)) telemetry.unmatchedRequest(method, status, context.log.errorCode, startedAtMs);
      void (context.work ?? Promise.resolve()).then(() => {
        const { log } = context;
        // After the work: a Settle's figures are known once it was sent (the request log's copy of them).
        if (requestLog !== undefined) recordFinished(requestLog, context, status, endedAtMs);
        const level = quietPaths.has(path) ? 'debug'
          : log.errorCode === 'internal_error' ? 'error' : status >= 500 ? 'warn' : 'info';
        // Built only when it will be written: at a level above info (as the bench runs) the
        // line of every successful request was a dozen fields of garbage.
        if (!logger.isLevelEnabled(level)) return;
        const line = {
          requestId, method, path, status,
          durationMs: Math.round(performance.now() - startedAtMs),
          organisationId: log.organisationId, projectId: log.projectId, model: log.model,
          reservedMicros: bigintText(log.reservedMicros), costMicros: bigintText(log.settledCostMicros),
          usageSource: log.usageSource, promptTokens: log.promptTokens, completionTokens: log.completionTokens,
          upstreamOutcome: log.upstreamOutcome, upstreamStatus: log.upstreamStatus, deployment: log.deployment, attempts: log.attempts,
          streamOutcome: log.streamOutcome, checkpoints: log.checkpoints,
          errorCode: log.errorCode, errorDetail: log.errorDetail,
          clientClosedEarly: responseFinished ? undefined : true,
          rateLimitMs: log.rateLimitMs, reserveMs: log.reserveMs, upstreamMs: log.upstreamMs,
        };
        logger[level](line, 'request');
      });
    });
    return context;
  };
}

/** Where finished requests go for the request log (request-log/request-log-recorder.ts). */
export interface RequestLogSink {
  add(record: ledgerV1.RequestRecord): void;
}

/**
 * Hands a finished request to the request log when it is one: an inference surface's request
 * whose organisation and project are known (a wholly unknown key has neither, and is not recorded).
 */
function recordFinished(requestLog: RequestLogSink, context: RequestContext, status: number, endedAtMs: number): void {
  const { log, observer } = context;
  if (observer === undefined || log.organisationId === undefined || log.projectId === undefined) return;
  const surface = requestLogSurface(observer.route);
  if (surface === undefined) return;
  requestLog.add(requestRecordOf({
    requestId: context.requestId, organisationId: log.organisationId, projectId: log.projectId, surface, model: log.model,
    status, errorCode: log.errorCode, stream: observer.stream,
    startedAtMs: context.startedAtMs, firstByteAtMs: observer.firstByteAtMs, endedAtMs,
    promptTokens: log.promptTokens, completionTokens: log.completionTokens, costMicros: log.settledCostMicros, classes: log.settledClasses,
  }));
}

/** Notes a thrown error's code and internal detail for the request's log line; returns it as the gateway's error. */
function noteError(context: RequestContext, error: unknown): ReturnType<typeof toGatewayError> {
  const gatewayError = toGatewayError(frameworkRequestError(error));
  context.log.errorCode = gatewayError.code;
  if (gatewayError.message !== gatewayError.publicMessage) context.log.errorDetail = gatewayError.message;
  return gatewayError;
}

/**
 * Answers a request with the error of anything thrown, in the shape one of the error mappings of
 * @gateway/errors gives it. The bytes are those express's res.set/res.status/res.json wrote (the
 * clients' contract): the error's headers, then `Content-Type` (one already set is kept, as
 * res.json kept it) and `Content-Length`, with those names' capitals.
 */
function sendErrorAs(res: ServerResponse, context: RequestContext, error: unknown, mapping: typeof toHttpError | typeof toAnthropicHttpError): void {
  const gatewayError = noteError(context, error);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const response = mapping(gatewayError);
  for (const name in response.headers) res.setHeader(name, String(response.headers[name]));
  res.statusCode = response.status;
  const json = JSON.stringify(response.body);
  res.setHeader('Content-Type', res.getHeader('content-type') ?? 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(Buffer.byteLength(json)));
  // A HEAD request's answer has no body: Node drops it.
  res.end(json);
}

/**
 * Answers a request with the OpenAI-shaped error of anything thrown, through the one mapping
 * of @gateway/errors, and notes the code and internal detail for the log line.
 */
export function sendError(res: ServerResponse, context: RequestContext, error: unknown): void {
  sendErrorAs(res, context, error, toHttpError);
}

/** sendError in Anthropic's error shape (`{"type":"error","error":{"type","message"}}`), for `/v1/messages`: the same status and message. */
export function sendAnthropicError(res: ServerResponse, context: RequestContext, error: unknown): void {
  sendErrorAs(res, context, error, toAnthropicHttpError);
}
