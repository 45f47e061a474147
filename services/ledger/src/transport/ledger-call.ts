import { GatewayError } from '@gateway/errors';
import type { Metadata } from '@gateway/grpc';
import { requestIdFrom, type Logger } from '@gateway/logger';
import { activeSpan } from '@gateway/telemetry';
import { InvalidQueryError } from '../domain/invalid-query-error.ts';
import { ledgerOutcomeAttribute } from './rpc-tracing.ts';

/** What a method's work returns: the response, and the outcome and ids to log beside it. */
export interface Handled<Res> {
  response: Res;
  outcome: string;
  subject: Record<string, string>;
}

/** One method's work run as one call, for the caller with `requestId`; a unary call and an Operate message alike. */
export type Perform = <Req, Res>(method: string, work: (request: Req) => Promise<Handled<Res>>, request: Req, requestId: string) => Promise<Res>;

/** The methods that only read: logged at debug, since they are polled (balances, usage, alerts). */
const readMethods = new Set(['GetBalance', 'ListUsage', 'GetProjectSpend', 'SummarizeUsage', 'ListBudgetAlerts']);
/** RecordRequests too: each proxy sends a batch about once a second (request log), so its line is debug. */
readMethods.add('RecordRequests');

/** The caller's request id from gRPC metadata (`x-request-id`), or a fresh one. */
export function requestIdOf(metadata: Metadata): string {
  const [value] = metadata.get('x-request-id');
  return requestIdFrom(typeof value === 'string' ? value : undefined);
}

/**
 * Runs one method's work as one call: its log line (info for calls that change state, debug for
 * reads, which the admin's dashboard and alert workers make every second or so); a malformed
 * read becomes invalid_request.
 */
export function createPerform(logger: Logger): Perform {
  return async (method, work, request, requestId) => {
    const startedAt = performance.now();
    try {
      const { response, outcome, subject } = await work(request);
      const level = readMethods.has(method) ? 'debug' : 'info';
      logger[level]({ method, requestId, outcome, ...subject, durationMs: Math.round(performance.now() - startedAt) }, 'ledger call');
      // The call's span, when traced (rpc-tracing.ts makes it active); undefined with tracing off.
      activeSpan()?.setAttribute(ledgerOutcomeAttribute, outcome);
      return response;
    } catch (error) {
      if (error instanceof InvalidQueryError) {
        throw new GatewayError('invalid_request', { publicMessage: error.message, internalMessage: `${method}: ${error.message}` });
      }
      throw error;
    }
  };
}

// The request log's reads (the dashboard's Requests page) are reads like the others: debug.
readMethods.add('ListRequests');
readMethods.add('GetRequest');
