export { acceptedContentEncodings, bodyReadError, createJsonBodyParser, rawBodyOf, type JsonBodyOptions } from './json-body.ts';
export {
  fieldPathOf, findJsonProblem, maxJsonDepth, problemMessage, textProblem,
  type JsonProblem, type JsonProblemKind, type JsonRules, type TextRule,
} from './json-problems.ts';
export { createJsonBodyReader, type JsonBodyReader, type JsonBodyReaderOptions } from './json-body-reader.ts';
export { createRequestGuard, frameworkRequestError, pathProblem, requestProblem } from './request-guard.ts';
export {
  answerClientError, clientErrorLingerMs, createGuardedServer, maxHeaderBytes, rawErrorResponse, type GuardedServerOptions,
} from './guarded-server.ts';
export { sendRawHttp, type RawHttpAnswer } from './raw-http.ts';
