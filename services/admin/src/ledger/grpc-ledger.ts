import { assertOutsideTransaction } from '@gateway/db';
import { ledgerV1 } from '@gateway/contracts';
import { GatewayError, fromGrpcError } from '@gateway/errors';
import { callUnary, channelCredentials, clientChannelOptions, type GrpcTransportSecurity } from '@gateway/grpc';
import type { LedgerPort } from '../common/domain/ledger-port.ts';
import { ledgerReads } from './ledger-reads.ts';
import { ledgerRequestLog } from './ledger-request-log.ts';
import type { LedgerCall } from './ledger-results.ts';
import { ledgerWrites } from './ledger-writes.ts';

/** The ledger reached over gRPC; `close()` releases its channel. */
export interface GrpcLedger extends LedgerPort {
  close(): void;
}

/**
 * Connects to the ledger at a gRPC target with the admin's certificate (or plaintext under
 * GRPC_INSECURE). Every call has a deadline of `callTimeoutMs`; a
 * failed call becomes a catalogue error through `fromGrpcError` (a peer that is down becomes
 * `service_unavailable`), and a non-OK result becomes the matching catalogue error.
 */
export function createGrpcLedger(options: {
  target: string;
  callTimeoutMs: number;
  /** Deadline of SetProjectBudget, ms (default callTimeoutMs): it answers once the project's credit grants are recalled, up to the grants' deadline. */
  budgetCallTimeoutMs?: number;
  security: GrpcTransportSecurity;
}): GrpcLedger {
  // The admin's certificate is its identity at the ledger; backoff and keepalive as every internal channel.
  const client = new ledgerV1.LedgerServiceClient(options.target, channelCredentials(options.security), clientChannelOptions);
  const call: LedgerCall = async (method, request, timeoutMs = options.callTimeoutMs) => {
    assertOutsideTransaction(`ledger ${method.name}`);
    try {
      return await callUnary(method, client, request, timeoutMs);
    } catch (error) {
      const mapped = fromGrpcError(error);
      if (mapped.code !== 'service_unavailable') throw mapped;
      // Every mutating ledger call is idempotent, so telling the caller to retry is safe advice.
      throw new GatewayError('service_unavailable', {
        publicMessage: 'The ledger did not answer. Try again shortly; retrying is safe.',
        internalMessage: mapped.message,
        cause: error,
      });
    }
  };

  return {
    ...ledgerWrites(client, call, options.budgetCallTimeoutMs ?? options.callTimeoutMs),
    ...ledgerReads(client, call),
    ...ledgerRequestLog(client, call),
    close() {
      client.close();
    },
  };
}
