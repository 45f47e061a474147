/**
 * The gRPC contracts between the gateway's services, generated from `proto/` by ts-proto.
 * Regenerate with `pnpm gen`; `generated-code.test.ts` fails when the committed code is stale.
 */
export * as ledgerV1 from './gen/gateway/ledger/v1/ledger.ts';
export * as configV1 from './gen/gateway/config/v1/config.ts';
