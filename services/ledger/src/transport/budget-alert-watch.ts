import { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import { GatewayError, toGrpcError } from '@gateway/errors';
import type { ServerWritableStream } from '@grpc/grpc-js';
import type { Logger } from '@gateway/logger';
import { listBudgetAlerts, parseAlertCursor } from '../domain/list-budget-alerts.ts';
import { requestIdOf } from './ledger-call.ts';
import { budgetAlertToProto } from './ledger-proto-tables.ts';

/** The WatchBudgetAlerts streams of one replica: the handler, and ending them all at shutdown. */
export interface BudgetAlertWatch {
  /** The WatchBudgetAlerts handler: alerts after the cursor, the backlog first, then new ones as polling finds them. */
  watch(call: ServerWritableStream<ledgerV1.WatchBudgetAlertsRequest, ledgerV1.BudgetAlert>): void;
  /** Ends every open watch (OK status) and refuses new ones, so the gRPC drain is not held up by them. */
  end(): void;
}

/** Budget alert watches polling the alerts table every `pollIntervalMs` (ms), which works with any number of replicas. */
export function createBudgetAlertWatch(db: Database, logger: Logger, pollIntervalMs: number): BudgetAlertWatch {
  const watches = new Set<() => void>();
  let watchesEnded = false;

  const watch = (call: ServerWritableStream<ledgerV1.WatchBudgetAlertsRequest, ledgerV1.BudgetAlert>) => {
    const requestId = requestIdOf(call.metadata);
    let cursor: bigint;
    try {
      cursor = parseAlertCursor(call.request.afterId);
    } catch (error) {
      // grpc-js sends an emitted error object as the stream's status.
      call.emit('error', toGrpcError(new GatewayError('invalid_request', { publicMessage: (error as Error).message })));
      return;
    }
    if (watchesEnded) { call.end(); return; }
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      watches.delete(finish);
      if (!call.cancelled && !call.destroyed) call.end();
      logger.info({ method: 'WatchBudgetAlerts', requestId, cursor: cursor.toString() }, 'ledger watch ended');
    };
    watches.add(finish);
    call.on('cancelled', finish);
    call.on('error', finish);
    logger.info({ method: 'WatchBudgetAlerts', requestId, cursor: cursor.toString() }, 'ledger watch started');
    const poll = async () => {
      try {
        for (;;) {
          const alerts = await listBudgetAlerts(db, { afterId: cursor === 0n ? '' : cursor.toString(), organisationId: '', limit: 500 });
          for (const alert of alerts) {
            if (ended) return;
            call.write(budgetAlertToProto(alert));
            cursor = BigInt(alert.id);
          }
          if (alerts.length < 500) break;
        }
      } catch (error) {
        // A failed poll is retried at the next tick; the watcher keeps its cursor.
        logger.warn({ err: error, method: 'WatchBudgetAlerts', requestId }, 'budget alert poll failed; will retry');
      }
      if (!ended) timer = setTimeout(() => { void poll(); }, pollIntervalMs);
    };
    void poll();
  };

  return {
    watch,
    end() {
      watchesEnded = true;
      for (const finish of [...watches]) finish();
    },
  };
}
