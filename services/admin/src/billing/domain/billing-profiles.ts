import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Actor } from '../../common/domain/actor.ts';
import { changedFields, recordAuditEvent } from '../../common/domain/audit-log.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';
import { billingProfileProblems, type BillingProfile, type BillingProfileInput } from './billing-profile.ts';
import { findBillingProfile, upsertBillingProfile } from './billing-profile-store.ts';

/** What the billing profile operations need. */
interface BillingProfileDeps {
  db: Database;
  access: ResourceAccess;
}

/**
 * The organisation's billing profile, or null when it has none yet. The role each call needs is
 * its route's, checked once before the call (the route table), not restated here.
 */
export async function getBillingProfile(deps: BillingProfileDeps, actor: Actor, organisationId: string): Promise<BillingProfile | null> {
  await deps.access.requireOrganisation(actor, organisationId);
  return (await findBillingProfile(deps.db, organisationId)) ?? null;
}

/**
 * Sets the organisation's billing profile (owners): the state code must be a GST state code,
 * a GSTIN well formed with its check character, registered in that state.
 */
export async function putBillingProfile(deps: BillingProfileDeps, actor: Actor, organisationId: string, input: BillingProfileInput): Promise<BillingProfile> {
  const { db, access } = deps;
  await access.requireOrganisation(actor, organisationId);
  const problems = billingProfileProblems(input);
  if (problems.length > 0) {
    throw new GatewayError('invalid_request', {
      publicMessage: problems.map(({ field, problem }) => `${field} ${problem}.`).join(' '),
      param: problems[0]!.field,
    });
  }
  return db.transaction(async (tx) => {
    await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
    const before = await findBillingProfile(tx, organisationId, { forUpdate: true });
    const after = await upsertBillingProfile(tx, organisationId, input);
    const changed = changedFields(before, after, { legalName: 'legal_name', address: 'address', stateCode: 'state_code', gstin: 'gstin', country: 'country', email: 'email' });
    if (Object.keys(changed).length > 0) {
      await recordAuditEvent(tx, {
        actor, organisationId, action: before ? 'billing_profile.update' : 'billing_profile.create', resourceType: 'billing_profile',
        resourceId: organisationId, changes: changed,
      });
    }
    return after;
  });
}
