import { errorCatalogue } from './catalogue.ts';
import { toGatewayError } from './gateway-error.ts';

/** The OpenAI-shaped error body every HTTP error of the gateway carries. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string };
}

/** An HTTP error response: status, body and any headers the error carries. */
export interface HttpErrorResponse {
  status: number;
  body: OpenAiErrorBody;
  headers: Record<string, string>;
}

/**
 * The one mapping from any thrown error to an HTTP response. Only catalogue messages and
 * messages the gateway wrote reach the body; an unknown error's text never does.
 */
export function toHttpError(error: unknown): HttpErrorResponse {
  const gatewayError = toGatewayError(error);
  const definition = errorCatalogue[gatewayError.code];
  return {
    status: definition.httpStatus,
    headers: gatewayError.headers,
    body: {
      error: {
        message: gatewayError.publicMessage,
        type: definition.type,
        param: gatewayError.param,
        code: gatewayError.code,
      },
    },
  };
}
