import { gatewayModelToJson } from '../domain/gateway-model-schema.ts';

/** The JSON of a gateway model: money as decimal strings, and no credential in any form (see gatewayModelToJson). */
export const gatewayModelJson = gatewayModelToJson;
