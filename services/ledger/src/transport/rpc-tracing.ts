import { status as grpcStatus, type sendUnaryData, type ServerUnaryCall, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { ledgerV1 } from '@gateway/contracts';
import { errorCodeMetadataKey } from '@gateway/errors';
import {
  ATTR_ERROR_TYPE, ATTR_RPC_METHOD, ATTR_RPC_STATUS_CODE, ATTR_RPC_SYSTEM_NAME, SpanKind, SpanStatusCode, contextFromTraceparent, contextWithSpan,
  linksFromTraceparents, withContext, type Link, type ServiceTracing, type Span,
} from '@gateway/telemetry';

/**
 * The ledger's side of a trace (docs/tracing.md): each unary call and each Operate-stream
 * operation is a SERVER span that continues the caller's trace from its W3C `traceparent`
 * (unary: gRPC metadata; Operate: the message's field, since a stream's metadata is sent once).
 * A settle_batch is one span with a link to each Settle's own trace, as OpenTelemetry's batch
 * conventions have it: its Settles belong to many requests. With tracing off nothing here runs.
 */

/** The ledger's gRPC service, as span names and `rpc.method` spell it. */
const ledgerService = 'gateway.ledger.v1.LedgerService';

/** The gRPC metadata key of the caller's trace context on a unary call (W3C Trace Context's header name). */
const traceparentMetadataKey = 'traceparent';

/** Attribute naming the ledger operation a span is (Reserve, Settle, SettleBatch, ...), whichever the transport. */
const ledgerOperationAttribute = 'gateway.ledger.operation';
/** Attribute naming how the operation arrived: `unary` or `operate` (a message on the Operate stream). */
const ledgerTransportAttribute = 'gateway.ledger.transport';
/** Attribute with the domain outcome of the operation (ok, insufficient_balance, ...), set by the service. */
export const ledgerOutcomeAttribute = 'gateway.ledger.outcome';
/** Attribute with the number of Settles a settle_batch carried. */
const ledgerBatchSizeAttribute = 'gateway.ledger.batch_size';

/**
 * Reads the admin polls (its dashboard and alert workers, every second or so): traced only as
 * part of a caller's trace, never as a trace of their own, or a poll would be a trace a second.
 */
const polledReads = new Set(['GetBalance', 'ListUsage', 'GetProjectSpend', 'SummarizeUsage', 'ListBudgetAlerts']);

/** The operation an Operate message carries, as a method name (SettleBatch for a settle_batch). */
function operationMethodOf(message: ledgerV1.OperationRequest): string {
  if (message.reserve) return 'Reserve';
  if (message.settle) return 'Settle';
  if (message.settleBatch) return 'SettleBatch';
  if (message.release) return 'Release';
  if (message.checkpoint) return 'Checkpoint';
  if (message.acquireGrant) return 'AcquireGrant';
  if (message.adjustGrant) return 'AdjustGrant';
  return 'Operate';
}

/** Starts the SERVER span of one ledger operation; `rpcMethod` is the gRPC method that carried it (Reserve, or Operate). */
function startLedgerSpan(
  tracing: ServiceTracing, operation: string, rpcMethod: string, transport: 'unary' | 'operate', parent: ReturnType<typeof contextFromTraceparent>, links?: Link[],
): Span {
  return tracing.tracer.startSpan(`${ledgerService}/${operation}`, {
    kind: SpanKind.SERVER,
    attributes: {
      [ATTR_RPC_SYSTEM_NAME]: 'grpc',
      [ATTR_RPC_METHOD]: `${ledgerService}/${rpcMethod}`,
      [ledgerOperationAttribute]: operation,
      [ledgerTransportAttribute]: transport,
    },
    ...(links !== undefined ? { links } : {}),
  }, parent);
}

/** Ends a ledger span with the answer's gRPC status code (by name) and, for a failure, the gateway's error code. */
function endLedgerSpan(span: Span, code: number, errorCode: string | undefined): void {
  span.setAttribute(ATTR_RPC_STATUS_CODE, grpcStatus[code] ?? 'UNKNOWN');
  if (code !== grpcStatus.OK) {
    span.setStatus({ code: SpanStatusCode.ERROR });
    if (errorCode !== undefined && errorCode !== '') span.setAttribute(ATTR_ERROR_TYPE, errorCode);
  }
  span.end();
}

/** The first string value of a metadata key, if any. */
function metadataText(metadata: { get(key: string): Array<string | Buffer> } | undefined, key: string): string | undefined {
  const [value] = metadata?.get(key) ?? [];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Wraps every unary method of `implementation` in a SERVER span continuing the caller's
 * `traceparent` metadata; the method's work runs with the span active (so the service can add
 * the outcome). A polled read with no caller trace runs untraced. Streaming methods pass through (Operate traces each message: traceOperation).
 * With tracing off, returns `implementation` itself: no wrapper on any call.
 */
export function traceUnaryCalls<Implementation extends UntypedServiceImplementation>(
  definition: ServiceDefinition, implementation: Implementation, tracing: ServiceTracing,
): Implementation {
  if (!tracing.enabled) return implementation;
  const wrapped: UntypedServiceImplementation = { ...implementation };
  for (const [key, attributes] of Object.entries(definition)) {
    const handler = implementation[key];
    if (handler === undefined || attributes.requestStream || attributes.responseStream) continue;
    const method = attributes.path.slice(attributes.path.lastIndexOf('/') + 1);
    const unary = handler as (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;
    const polled = polledReads.has(method);
    wrapped[key] = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      const traceparent = metadataText(call.metadata, traceparentMetadataKey);
      if (polled && traceparent === undefined) { unary(call, callback); return; }
      const parent = contextFromTraceparent(traceparent);
      const span = startLedgerSpan(tracing, method, method, 'unary', parent);
      withContext(contextWithSpan(span, parent), () => {
        unary(call, (error, ...rest) => {
          endLedgerSpan(span, error ? (error.code ?? grpcStatus.UNKNOWN) : grpcStatus.OK, metadataText(error?.metadata, errorCodeMetadataKey));
          callback(error, ...rest);
        });
      });
    };
  }
  return wrapped as Implementation;
}

/**
 * Answers one Operate message inside its SERVER span, continuing the message's `traceparent`.
 * A settle_batch gets one span, a root linked to every Settle's trace; it is not made active,
 * so the Settles' outcomes (many) are not written over one another on it.
 */
export async function traceOperation(
  tracing: ServiceTracing, message: ledgerV1.OperationRequest, answer: () => Promise<ledgerV1.OperationResponse>,
): Promise<ledgerV1.OperationResponse> {
  const operation = operationMethodOf(message);
  let span: Span;
  let response: ledgerV1.OperationResponse;
  if (message.settleBatch) {
    const { settles } = message.settleBatch;
    span = startLedgerSpan(tracing, operation, 'Operate', 'operate', contextFromTraceparent(undefined), linksFromTraceparents(settles.map((settle) => settle.traceparent)));
    span.setAttribute(ledgerBatchSizeAttribute, settles.length);
    response = await answer().catch((error: unknown) => { span.end(); throw error; });
  } else {
    const parent = contextFromTraceparent(message.traceparent);
    span = startLedgerSpan(tracing, operation, 'Operate', 'operate', parent);
    response = await withContext(contextWithSpan(span, parent), answer).catch((error: unknown) => { span.end(); throw error; });
  }
  endLedgerSpan(span, response.error?.code ?? grpcStatus.OK, response.error?.errorCode);
  return response;
}
