/** The gateway's one error catalogue and its two mappings: to HTTP and to gRPC. */
export { errorCatalogue, isErrorCode, type AnthropicErrorType, type ErrorCode, type ErrorDefinition } from './catalogue.ts';
export { GatewayError, toGatewayError, type GatewayErrorOptions } from './gateway-error.ts';
export { toAnthropicHttpError, toHttpError, type AnthropicErrorBody, type HttpErrorResponse, type OpenAiErrorBody } from './http.ts';
export { toGrpcError, fromGrpcError, errorCodeMetadataKey, type GrpcErrorPayload } from './grpc.ts';
