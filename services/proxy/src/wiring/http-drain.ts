import type { Logger } from '@gateway/logger';
import type { RunningHttpServer } from '@gateway/service-runtime';
import { proxySettleBoundMs, type ProxyConfig } from '../config.ts';
import type { OutboxHandover } from '../ledger/outbox-handover.ts';
import type { SettleOutbox } from '../ledger/settle-outbox.ts';
import type { TaskTracker } from '../task-tracker.ts';

/** What the HTTP drain waits on and cuts: the request work, the streams being relayed and the settle outbox. */
interface HttpDrainDeps {
  config: ProxyConfig;
  logger: Logger;
  tasks: TaskTracker;
  activeStreams: Set<AbortController>;
  outbox: SettleOutbox;
  /** The shared outbox in Redis what the ledger has not answered is handed to; undefined without Redis. */
  handover: OutboxHandover | undefined;
}

/** The proxy's drain: the HTTP server's close stage, waiting for every request's billing rather than for its bytes. */
export function createHttpDrain({ config, logger, tasks, activeStreams, outbox, handover }: HttpDrainDeps): (http: RunningHttpServer) => Promise<void> {
  // After the grace, cut streams still get time for their Settles to leave the outbox (a few attempts).
  const settleBoundMs = proxySettleBoundMs(config);
  return async (http: RunningHttpServer) => {
    // No new connections; idle keep-alive ones closed; responses still to be written end their connection.
    http.stopAccepting();
    // A stopping replica takes no more of other replicas' Settles.
    await handover?.stopAdopting();
    // In-flight requests (streams included) settle or release their Reserve before they end, so wait for them.
    let drained = await tasks.drain(config.SHUTDOWN_GRACE_MS);
    if (!drained) {
      logger.warn({ pending: tasks.size, streams: activeStreams.size }, 'shutdown grace ran out; cutting remaining streams');
      // Each cut stream ends with an error event, aborts its upstream and settles what it delivered.
      const cutStreams = activeStreams.size;
      for (const stream of activeStreams) stream.abort('shutdown');
      if (cutStreams > 0) drained = await tasks.drain(settleBoundMs);
    }
    // Settles and Releases the ledger has still not answered go to the shared outbox, where a live
    // replica adopts them (without Redis, or if it fails: each is logged for replay). The requests
    // waiting on them then finish and write their log lines.
    const { handedOver, abandoned } = await outbox.handOver(handover === undefined ? undefined : (records) => handover.handOver(records));
    if (handedOver + abandoned > 0) drained = await tasks.drain(1000);
    await handover?.leaveGroup();
    if (!drained) logger.error({ pending: tasks.size }, 'requests still pending after the cut; the ledger expiry sweeper will resolve their reservations');
    // Bounded wait for the last responses to flush and their connections to close, then cut.
    await http.close(drained ? 1000 : 0);
  };
}
