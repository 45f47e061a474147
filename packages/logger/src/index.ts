import { randomUUID } from 'node:crypto';
import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * Paths pino censors wherever they appear in a log line. Keys, tokens and upstream
 * credentials must never reach a log, whichever object carries them.
 */
export const redactedPaths = [
  'authorization', '*.authorization', 'headers.authorization', '*.headers.authorization',
  'req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]',
  'apiKey', '*.apiKey', 'api_key', '*.api_key', 'secret', '*.secret', 'token', '*.token',
  'password', '*.password', 'credential', '*.credential', 'upstream.apiKey', '*.upstream.apiKey',
  // The key that seals tool-call ids (a config snapshot's, or a ConfigUpdate's in proto's spelling).
  'toolCallIdKey', '*.toolCallIdKey', '*.*.toolCallIdKey', 'tool_call_id_key', '*.tool_call_id_key', '*.*.tool_call_id_key',
  // The key that marks an organisation's cacheable prompts, in both spellings.
  'cacheScopeKey', '*.cacheScopeKey', '*.*.cacheScopeKey', 'cache_scope_key', '*.cache_scope_key', '*.*.cache_scope_key',
];

/** Creates the JSON logger of one service, with secrets redacted and the service name on every line. */
export function createLogger(service: string, level: LoggerOptions['level'] = 'info', destination?: pino.DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    base: { service },
    redact: { paths: redactedPaths, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/** The id of a request: the caller's `x-request-id` when it is sane, otherwise a fresh UUID. */
export function requestIdFrom(headerValue: string | string[] | undefined): string {
  const candidate = Array.isArray(headerValue) ? headerValue[0] : headerValue;
  return candidate !== undefined && requestIdPattern.test(candidate) ? candidate : randomUUID();
}
