import {
  status as grpcStatus, type sendUnaryData, type ServerUnaryCall, type ServiceDefinition, type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import type { LedgerMetrics } from '@gateway/telemetry';

/** The two metrics every answered call and Operate-stream operation feeds. */
export type RpcMetrics = Pick<LedgerMetrics, 'ledgerRpcRequests' | 'ledgerRpcDuration'>;

/** The name of a gRPC status code as Prometheus sees it (OK, INVALID_ARGUMENT, ...); UNKNOWN for a number grpc-js does not name. */
function grpcCodeName(code: number): string {
  return grpcStatus[code] ?? 'UNKNOWN';
}

/** A method's name as the gRPC path ends (`/gateway.ledger.v1.LedgerService/Reserve` → `Reserve`). */
function methodNameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * The `method` label's values: the LedgerService's methods as the proto names them (`Reserve`,
 * `GetBalance`, `Operate`, ...), one spelling, the one grpcurl and the gRPC path show.
 */
export const ledgerRpcMethods: readonly string[] = Object.values(ledgerV1.LedgerServiceService).map((method) => methodNameOf(method.path));

/** The method every Operate-stream operation is counted under; its `operation` label says which. */
const operateMethod = methodNameOf(ledgerV1.LedgerServiceService.operate.path);

/**
 * The `operation` label's values for Operate-stream messages, snake_case as the group commit's
 * and the proxy's `operation` labels; `none` for a message that names none. Unary calls have
 * `operation=""`.
 */
export const operateOperations = ['reserve', 'settle', 'settle_batch', 'release', 'checkpoint', 'acquire_grant', 'adjust_grant', 'none'] as const;
/** One Operate-stream operation, as labelled. */
type OperateOperation = (typeof operateOperations)[number];

/** Records one answer: a `method` (`operation` '' for a unary call), answered with gRPC `code`, `startedAtMs` (performance.now()) ago. */
function observeRpc(metrics: RpcMetrics, method: string, operation: OperateOperation | '', code: number, startedAtMs: number): void {
  metrics.ledgerRpcRequests.inc({ method, operation, code: grpcCodeName(code) });
  metrics.ledgerRpcDuration.observe({ method, operation }, (performance.now() - startedAtMs) / 1000);
}

/** Records one answered Operate-stream message: method `Operate`, its operation, its gRPC `code`, `startedAtMs` (performance.now()) ago. */
export function observeOperation(metrics: RpcMetrics, message: ledgerV1.OperationRequest, code: number, startedAtMs: number): void {
  observeRpc(metrics, operateMethod, operationLabel(message), code, startedAtMs);
}

/** The operation an Operate-stream message asks for (the `operation` label). */
function operationLabel(message: ledgerV1.OperationRequest): OperateOperation {
  if (message.reserve) return 'reserve';
  if (message.settle) return 'settle';
  if (message.settleBatch) return 'settle_batch';
  if (message.release) return 'release';
  if (message.checkpoint) return 'checkpoint';
  if (message.acquireGrant) return 'acquire_grant';
  if (message.adjustGrant) return 'adjust_grant';
  return 'none';
}

/**
 * Wraps every unary method of `implementation` so each answer (a response or an error status,
 * authorization refusals included when it wraps the authorizing layer) counts once in
 * `ledgerRpcRequests{method,operation,code}` and `ledgerRpcDuration{method,operation}` with
 * operation ''. Streaming methods pass through: Operate counts its operations itself, one per
 * message (observeOperation).
 */
export function instrumentUnaryCalls<Implementation extends UntypedServiceImplementation>(
  definition: ServiceDefinition, implementation: Implementation, metrics: RpcMetrics,
): Implementation {
  const wrapped: UntypedServiceImplementation = { ...implementation };
  for (const [key, attributes] of Object.entries(definition)) {
    const handler = implementation[key];
    if (handler === undefined || attributes.requestStream || attributes.responseStream) continue;
    const method = methodNameOf(attributes.path);
    const unary = handler as (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;
    wrapped[key] = (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
      const startedAtMs = performance.now();
      unary(call, (error, ...rest) => {
        observeRpc(metrics, method, '', error ? (error.code ?? grpcStatus.UNKNOWN) : grpcStatus.OK, startedAtMs);
        callback(error, ...rest);
      });
    };
  }
  return wrapped as Implementation;
}
