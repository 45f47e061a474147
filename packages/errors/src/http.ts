import { errorCatalogue, type AnthropicErrorType } from './catalogue.ts';
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

/** Anthropic's error body: what `/v1/messages` answers with, so Anthropic's clients map it to their error classes. */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
}

/**
 * The same mapping as toHttpError (one status, one public message, the same headers) in
 * Anthropic's error shape, for the routes that speak Anthropic's API.
 */
export function toAnthropicHttpError(error: unknown): { status: number; body: AnthropicErrorBody; headers: Record<string, string> } {
  const { status, headers, body } = toHttpError(error);
  const code = body.error.code as keyof typeof errorCatalogue;
  return { status, headers, body: { type: 'error', error: { type: errorCatalogue[code].anthropicType, message: body.error.message } } };
}
