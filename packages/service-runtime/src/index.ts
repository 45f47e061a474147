import { ConfigError } from '@gateway/config';
import { createLogger, type Logger } from '@gateway/logger';

export {
  createHealthProbes, createProbeOnlyListener,
  type DependencyCheck, type HealthProbeOptions, type HealthProbes, type ProbeAnswer, type ProbeBody, type ProbeOnlyListenerOptions,
} from './health-probes.ts';
export { startHttpServer, type HttpServerOptions, type RunningHttpServer } from './http-server.ts';
export {
  CleanupError, createLifecycle, type CleanupFailure, type Lifecycle, type LifecycleOptions,
} from './lifecycle.ts';

/** What a started service hands back: its bound ports and a close that drains and frees everything. */
export interface RunningService {
  ports: Record<string, number>;
  close(): Promise<void>;
}

/** The config fields the process lifecycle itself needs. */
export interface LifecycleConfig {
  LOG_LEVEL: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** How long in-flight work may take after SIGTERM, ms. */
  SHUTDOWN_GRACE_MS: number;
}

/** How to run one service as a process. */
export interface ServiceProcessOptions<Config extends LifecycleConfig> {
  service: string;
  loadConfig(env: Record<string, string | undefined>): Config;
  start(config: Config, logger: Logger): Promise<RunningService>;
  /**
   * The longest the service's close may take after the signal, ms; default SHUTDOWN_GRACE_MS.
   * A service whose drain goes on past the grace (the proxy settles cut streams) says how long.
   */
  stopBoundMs?(config: Config): number;
}

/** Time past the stop bound allowed for closing pools and sockets before giving up, ms. */
export const hardStopMarginMs = 5_000;

/**
 * Runs a service as a process: loads its config (every problem printed at once, exit 1), starts
 * it, and on SIGTERM or SIGINT closes it (the app turns not ready and drains for up to
 * SHUTDOWN_GRACE_MS, or the service's stopBoundMs) and exits 0. A stop that overruns that bound
 * by more than the hard-stop margin, or a failed start, exits 1.
 */
export async function runServiceProcess<Config extends LifecycleConfig>(options: ServiceProcessOptions<Config>): Promise<void> {
  let config: Config;
  try {
    config = options.loadConfig(process.env);
  } catch (error) {
    process.stderr.write(`${error instanceof ConfigError ? error.message : `${options.service}: ${String(error)}`}\n`);
    process.exit(1);
  }
  const logger = createLogger(options.service, config.LOG_LEVEL);

  let running: RunningService | undefined;
  let stopSignal: NodeJS.Signals | undefined;
  const closeAndExit = (service: RunningService) => {
    service.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'stop failed');
        process.exit(1);
      },
    );
  };
  const stop = (signal: NodeJS.Signals) => {
    if (stopSignal) return;
    stopSignal = signal;
    const stopBoundMs = options.stopBoundMs?.(config) ?? config.SHUTDOWN_GRACE_MS;
    logger.info({ signal, graceMs: config.SHUTDOWN_GRACE_MS, stopBoundMs }, 'stopping: not ready, draining');
    setTimeout(() => {
      logger.error('clean stop took too long; exiting');
      process.exit(1);
    }, stopBoundMs + hardStopMarginMs).unref();
    if (running) closeAndExit(running);
  };
  // Installed before the start, so a signal during start-up is not lost: it stops the service
  // as soon as the start finishes.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  try {
    running = await options.start(config, logger);
  } catch (error) {
    // Database unreachable, migration refused, port taken: say so and exit non-zero.
    logger.fatal({ err: error }, `${options.service} failed to start`);
    process.exit(1);
  }
  logger.info({ ports: running.ports }, `${options.service} started`);
  if (stopSignal) closeAndExit(running);
}
