import { responseSealerForKey, type ResponseSealer } from '../domain/responses/response-sealer.ts';

/** The sealer production builds for a snapshot's response store key (32 bytes), through the same function (responseSealerForKey). */
export function createResponseSealer(platformKey: Uint8Array): ResponseSealer {
  return responseSealerForKey(() => undefined)(platformKey);
}
