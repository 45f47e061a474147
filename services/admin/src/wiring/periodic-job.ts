import type { Logger } from '@gateway/logger';

/** What startPeriodicJob runs and how often (times in ms). */
export interface PeriodicJobOptions {
  /** Names the job in the warning logged when a run fails (the `worker` field). */
  name: string;
  /** Wait before the first run, ms (0: as soon as the event loop is free). */
  firstDelayMs: number;
  /** Wait from the end of one run to the start of the next, ms. */
  intervalMs: number;
  /** One run of the job; a rejection is logged and the job runs again at the next interval. */
  run: () => Promise<unknown>;
  /** The message of the warning logged when a run fails (the error goes in the `err` field). */
  failureMessage: string;
  /** Where a failed run is reported. */
  logger: Pick<Logger, 'warn'>;
}

/**
 * Runs `run` after `firstDelayMs` and then every `intervalMs` until closed. Runs never overlap:
 * the next one is only scheduled once the previous one has settled, so a slow run delays the next
 * instead of piling up. close() (the same promise on every call) stops the schedule and resolves
 * once a run in flight has finished; no run starts after it.
 */
export function startPeriodicJob(options: PeriodicJobOptions): { close(): Promise<void> } {
  const { name, intervalMs, run, failureMessage, logger } = options;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const runOnce = () => {
    running = run()
      .then(() => undefined, (error: unknown) => logger.warn({ err: error, worker: name }, failureMessage))
      .finally(() => {
        running = undefined;
        if (!stopped) timer = setTimeout(runOnce, intervalMs);
      });
  };
  timer = setTimeout(runOnce, options.firstDelayMs);
  let closed: Promise<void> | undefined;
  return {
    close() {
      closed ??= (async () => {
        stopped = true;
        clearTimeout(timer);
        await running;
      })();
      return closed;
    },
  };
}
