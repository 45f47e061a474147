import { errorCatalogue, type ErrorCode } from './catalogue.ts';

/** Options of a GatewayError beyond its code. */
export interface GatewayErrorOptions {
  /** Shown to the caller instead of the catalogue's message; must be written by us. */
  publicMessage?: string;
  /** For logs only; never shown to a caller. */
  internalMessage?: string;
  /** The request field at fault, as OpenAI's `error.param`. */
  param?: string;
  /** Extra response headers (e.g. Retry-After) that belong to this error over HTTP. */
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error the gateway means to show: a catalogue code plus a message safe for callers. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly publicMessage: string;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, options: GatewayErrorOptions = {}) {
    const publicMessage = options.publicMessage ?? errorCatalogue[code].publicMessage;
    super(options.internalMessage ?? publicMessage, { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.publicMessage = publicMessage;
    this.param = options.param ?? null;
    this.headers = options.headers ?? {};
  }
}

/** Turns anything thrown into a GatewayError; unknown errors become `internal_error` with no detail. */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  return new GatewayError('internal_error', {
    internalMessage: error instanceof Error ? error.message : String(error),
    cause: error,
  });
}
