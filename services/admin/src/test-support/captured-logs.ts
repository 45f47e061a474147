import { createLogger, type Logger } from '@gateway/logger';

/** A real pino logger whose lines are kept in memory, so tests can assert what was (not) logged. */
export interface CapturedLogs {
  logger: Logger;
  /** Every line written so far, as one string. */
  text(): string;
}

/** Creates a logger at `info` that writes into memory instead of stdout. */
export function captureLogs(): CapturedLogs {
  const lines: string[] = [];
  const logger = createLogger('admin', 'info', { write: (line: string) => { lines.push(line); } });
  return { logger, text: () => lines.join('') };
}
