import type { ledgerV1 } from '@gateway/contracts';
import type { Database } from '@gateway/db';
import type { LedgerOperationRunner } from '../domain/apply-ledger-operations.ts';
import { checkpoint } from '../domain/checkpoint.ts';
import { acquireGrant, adjustGrant } from '../domain/grants.ts';
import { release } from '../domain/release.ts';
import { reserveOrRecall } from '../domain/reserve-or-recall.ts';
import { settle } from '../domain/settle.ts';
import type { Handled } from './ledger-call.ts';
import {
  acquireGrantResults, adjustGrantResults, billingModeFromProto, checkpointResults, releaseResults, reserveResults, settleResults,
  usageSourceFromProto,
} from './ledger-proto-tables.ts';
import type { RecallPush } from './recall-push.ts';

/** The hot-path methods' work, shared by their unary calls and the Operate stream. */
export interface HotPathWork {
  reserve(request: ledgerV1.ReserveRequest): Promise<Handled<ledgerV1.ReserveResponse>>;
  acquireGrant(request: ledgerV1.AcquireGrantRequest): Promise<Handled<ledgerV1.AcquireGrantResponse>>;
  /** Also the owner of the adjusted grant, for the stream that carried the adjustment. */
  adjustGrant(request: ledgerV1.AdjustGrantRequest): Promise<Handled<ledgerV1.AdjustGrantResponse> & { ownerId: string }>;
  settle(request: ledgerV1.SettleRequest): Promise<Handled<ledgerV1.SettleResponse>>;
  release(request: ledgerV1.ReleaseRequest): Promise<Handled<ledgerV1.ReleaseResponse>>;
  checkpoint(request: ledgerV1.CheckpointRequest): Promise<Handled<ledgerV1.CheckpointResponse>>;
}

/**
 * The hot-path work over the domain: Reserve and Settle through `batcher` (group commit), the
 * rest in their own transactions; grants newly recalled on the way are pushed to their owners at
 * once. `grantSharePercent`: largest share of available one credit grant may hold, percent.
 */
export function createHotPathWork(db: Database, batcher: LedgerOperationRunner, recallPush: RecallPush, grantSharePercent: number): HotPathWork {
  return {
    async reserve(request) {
      const { outcome, grantsRecalled, liftable, newlyRecalled } = await reserveOrRecall(db, batcher, {
        reservationId: request.reservationId, organisationId: request.organisationId, projectId: request.projectId,
        billingMode: billingModeFromProto(request.billingMode), amountMicros: request.amountMicros,
        ttlMs: request.ttlMs, modelSlug: request.modelSlug, ...(request.grantId !== undefined ? { grantId: request.grantId } : {}),
      });
      recallPush.push(newlyRecalled);
      return {
        response: {
          ...outcome, result: reserveResults[outcome.result],
          ...(grantsRecalled !== undefined ? { grantsRecalled } : {}), ...(liftable !== undefined ? { liftable } : {}),
        },
        outcome: outcome.result,
        subject: {
          reservationId: request.reservationId, organisationId: request.organisationId,
          ...(request.grantId !== undefined ? { grantId: request.grantId } : {}),
          ...(grantsRecalled ? { grantsRecalled: String(grantsRecalled) } : {}),
        },
      };
    },
    async acquireGrant(request) {
      const { recalled, ...outcome } = await acquireGrant(db, {
        grantId: request.grantId, organisationId: request.organisationId, projectId: request.projectId,
        billingMode: billingModeFromProto(request.billingMode), minMicros: request.minMicros, wantMicros: request.wantMicros,
        ttlMs: request.ttlMs, ownerId: request.ownerId,
      }, grantSharePercent);
      recallPush.push(recalled.filter((grant) => grant.newlyRecalled));
      return {
        response: { ...outcome, result: acquireGrantResults[outcome.result] },
        outcome: outcome.result,
        subject: {
          grantId: request.grantId, organisationId: request.organisationId, projectId: request.projectId, ownerId: request.ownerId,
          grantedMicros: outcome.grantedMicros.toString(), ...(recalled.length > 0 ? { grantsRecalled: String(recalled.length) } : {}),
        },
      };
    },
    async adjustGrant(request) {
      const { ownerId, ...outcome } = await adjustGrant(db, {
        adjustmentId: request.adjustmentId, grantId: request.grantId, returnMicros: request.returnMicros, close: request.close,
        extendTtlMs: request.extendTtlMs, reason: request.reason,
      });
      return {
        response: { ...outcome, result: adjustGrantResults[outcome.result] },
        outcome: outcome.result, ownerId,
        subject: {
          adjustmentId: request.adjustmentId, grantId: request.grantId, returnedMicros: outcome.returnedMicros.toString(),
          ...(request.close ? { close: 'true' } : {}),
        },
      };
    },
    async settle(request) {
      const outcome = await settle(batcher, {
        reservationId: request.reservationId, inputTokens: request.inputTokens, outputTokens: request.outputTokens,
        costMicros: request.costMicros, providerCostMicros: request.providerCostMicros, modelSlug: request.modelSlug,
        usageSource: usageSourceFromProto(request.usageSource), requestId: request.requestId,
        overrunOutputTokens: request.overrunOutputTokens,
        ...(request.grantId !== undefined ? { grantId: request.grantId, reservedMicros: request.reservedMicros ?? 0n } : {}),
        tokenClasses: request.tokenClasses,
        deployment: request.deployment,
        failedAttempts: request.failedAttempts,
      });
      return {
        response: { ...outcome, result: settleResults[outcome.result] },
        outcome: outcome.result, subject: { reservationId: request.reservationId },
      };
    },
    async release(request) {
      const outcome = await release(db, {
        reservationId: request.reservationId, reason: request.reason, failedAttempts: request.failedAttempts,
      });
      return {
        response: { ...outcome, result: releaseResults[outcome.result] },
        outcome: outcome.result, subject: { reservationId: request.reservationId },
      };
    },
    async checkpoint(request) {
      const outcome = await checkpoint(db, request);
      return {
        response: { ...outcome, result: checkpointResults[outcome.result] },
        outcome: outcome.result, subject: { reservationId: request.reservationId, sequence: request.sequence.toString() },
      };
    },
  };
}
