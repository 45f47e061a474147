import {
  status as grpcStatus, type sendUnaryData, type ServerUnaryCall, type ServiceDefinition, type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { ledgerV1 } from '@gateway/contracts';
import type { LedgerMetrics } from '@gateway/telemetry';

/** The two metrics every answered call and Operate-stream operation feeds. */
export type RpcMetrics = Pick<LedgerMetrics, 'ledgerRpcRequests' | 'ledgerRpcDuration'>;

/** The name of a gRPC status code as Prometheus sees it (OK, INVALID_ARGUMENT, ...); UNKNOWN for a number grpc-js does not name. */
function grpcCodeName(code: number): string {
  return grpcStatus[code] ?? 'UNKNOWN';
}

/** Records one answer: a call or operation `method`, answered with gRPC `code`, `startedAtMs` (performance.now()) ago. */
export function observeRpc(metrics: RpcMetrics, method: string, code: number, startedAtMs: number): void {
  metrics.ledgerRpcRequests.inc({ method, code: grpcCodeName(code) });
  metrics.ledgerRpcDuration.observe({ method }, (performance.now() - startedAtMs) / 1000);
}

/**
 * The label of one Operate-stream message: its operation in snake_case (reserve, settle,
 * settle_batch, release, checkpoint, acquire_grant, adjust_grant), so it never collides with the
 * unary method of the same work (Reserve, Settle, ...); `none` for a message that names none.
 */
export function operationLabel(message: ledgerV1.OperationRequest): string {
  if (message.reserve) return 'reserve';
  if (message.settle) return 'settle';
  if (message.settleBatch) return 'settle_batch';
  if (message.release) return 'release';
  if (message.checkpoint) return 'checkpoint';
  if (message.acquireGrant) return 'acquire_grant';
  if (message.adjustGrant) return 'adjust_grant';
  return 'none';
}

/** A method's name as the gRPC path ends (`/gateway.ledger.v1.LedgerService/Reserve` → `Reserve`). */
function methodNameOf(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * Wraps every unary method of `implementation` so each answer (a response or an error status,
 * authorization refusals included when it wraps the authorizing layer) counts once in
 * `ledgerRpcRequests{method,code}` and `ledgerRpcDuration{method}`. Streaming methods pass
 * through: Operate counts its operations itself, one per message.
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
        observeRpc(metrics, method, error ? (error.code ?? grpcStatus.UNKNOWN) : grpcStatus.OK, startedAtMs);
        callback(error, ...rest);
      });
    };
  }
  return wrapped as Implementation;
}
