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
 * as soon as it has started) and the readiness that goes with it. Ready only once start() has
 * finished, not ready from the instant close() begins, before anything drains.
 */
export interface Lifecycle {
  /** Registers the close of something just started; close() runs the steps in reverse order of registration. */
  defer(name: string, close: () => Promise<void> | void): void;
  /**
   * Runs the service's start. When it resolves the service may report ready (its dependency
   * checks permitting); when it throws, every step registered so far is closed in reverse order
   * (their failures are logged) and the start's own error is rethrown.
   */
  start<T>(start: () => Promise<T>): Promise<T>;
  /** True between the end of a successful start() and the beginning of close(). */
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

  const close = (): Promise<void> => {
    closing = true;
    closed ??= runSteps();
    return closed;
  };

  return {
    defer(name, stop) {
      // A step registered once the steps have run would never run: the resource would leak.
      if (closed !== undefined) throw new Error(`cannot register "${name}": the lifecycle is already closing`);
      steps.push({ name, close: stop });
    },
    async start<T>(start: () => Promise<T>): Promise<T> {
      let value: T;
      try {
        value = await start();
      } catch (error) {
        // The steps' own failures are already logged one by one; the start's error is what the caller needs.
        await close().catch(() => undefined);
        throw error;
      }
      // A close() that began during the start (a stop signal racing it) keeps the service not ready.
      if (!closing) started = true;
      return value;
    },
    isReady: () => started && !closing,
    isClosing: () => closing,
    close,
  };
}
