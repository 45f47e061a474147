import type { Logger } from '@gateway/logger';

/** One registered close step: what it stops (for the log and the failure report) and how. */
interface CleanupStep {
  name: string;
  close(): Promise<void> | void;
}

/** A close step that failed, by the name it was registered under. */
export interface CleanupFailure {
  name: string;
  error: unknown;
}

/** Thrown by Lifecycle.close() once every step has run, when one or more of them failed. */
export class CleanupError extends AggregateError {
  /** Each failed step with its error, in the order they ran (reverse of registration). */
  readonly failures: readonly CleanupFailure[];

  constructor(failures: readonly CleanupFailure[]) {
    super(failures.map((failure) => failure.error), `close failed: ${failures.map((failure) => failure.name).join(', ')}`);
    this.name = 'CleanupError';
    this.failures = failures;
  }
}

/**
 * The ordered start and close of one service: a cleanup stack (each resource registers its close
 * as soon as it has started) and the readiness that goes with it. Ready only once the start has
 * finished (markStarted), not ready from the instant close() begins, before anything drains.
 */
export interface Lifecycle {
  /** Registers the close of something just started; close() runs the steps in reverse order of registration. */
  defer(name: string, close: () => Promise<void> | void): void;
  /** The start has finished: the service may report ready (its dependency checks permitting). */
  markStarted(): void;
  /** True between markStarted() and the beginning of close(). */
  isReady(): boolean;
  /** True from the beginning of close(): requests still arriving should be refused or told to close their connection. */
  isClosing(): boolean;
  /**
   * Turns not ready at once, then runs every registered step in reverse order, each one even when
   * an earlier one failed, and rejects with a CleanupError naming the failed steps (each is also
   * logged). Later calls return the same promise.
   */
  close(): Promise<void>;
}

/** Options of createLifecycle. */
export interface LifecycleOptions {
  /** Receives one error line per failed close step. */
  logger: Logger;
}

/** Creates the cleanup stack and readiness of one service (see Lifecycle). */
export function createLifecycle(options: LifecycleOptions): Lifecycle {
  const steps: CleanupStep[] = [];
  let started = false;
  let closing = false;
  let closed: Promise<void> | undefined;

  const runSteps = async (): Promise<void> => {
    const failures: CleanupFailure[] = [];
    // Reverse order: what started last (and may still use what started before it) stops first.
    for (const step of steps.splice(0).reverse()) {
      try {
        await step.close();
      } catch (error) {
        options.logger.error({ err: error, step: step.name }, 'close step failed');
        failures.push({ name: step.name, error });
      }
    }
    if (failures.length > 0) throw new CleanupError(failures);
  };

  return {
    defer(name, close) {
      // A resource started after close() began (a start racing a stop) is stopped by this same close.
      if (closed !== undefined) throw new Error(`cannot register "${name}": the lifecycle is already closing`);
      steps.push({ name, close });
    },
    markStarted() {
      if (!closing) started = true;
    },
    isReady: () => started && !closing,
    isClosing: () => closing,
    close() {
      closing = true;
      closed ??= runSteps();
      return closed;
    },
  };
}

/**
 * Runs a service's start against a fresh lifecycle. On success the lifecycle is marked started
 * and returned with the start's result; if the start throws, everything it had registered is
 * closed in reverse order (failures of those closes are logged) and the start's error is rethrown.
 */
export async function startLifecycle<T>(options: LifecycleOptions, start: (lifecycle: Lifecycle) => Promise<T>): Promise<{ lifecycle: Lifecycle; value: T }> {
  const lifecycle = createLifecycle(options);
  let value: T;
  try {
    value = await start(lifecycle);
  } catch (error) {
    // The steps' own failures are already logged one by one; the start's error is what the caller needs.
    await lifecycle.close().catch(() => undefined);
    throw error;
  }
  lifecycle.markStarted();
  return { lifecycle, value };
}
