import type { Database } from '@gateway/db';
import { requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import { changedFields, recordAuditEvent } from '../../common/domain/audit-log.ts';
import { isId, newId } from '../../common/domain/ids.ts';
import { notFound } from '../../common/domain/resource-access.ts';
import { findPackage, insertPackage, listPackages, updatePackage, type TopUpPackage } from './topup-store.ts';

/** The package fields an audit event names, by their API names. */
const packageAuditFields = { name: 'name', pricePaise: 'price_paise', creditMicros: 'credit_micros', active: 'active', sortOrder: 'sort_order' } as const;

/** The packages on sale (active), or all of them for a platform admin asking `includeInactive`. */
export async function listTopUpPackages(deps: { db: Database }, actor: Actor, options: { includeInactive: boolean }): Promise<TopUpPackage[]> {
  if (options.includeInactive) requirePlatformAdmin(actor);
  return listPackages(deps.db, options);
}

/** Creates a package (platform admins); price in paise (GST included), credit in µ₹. */
export async function createTopUpPackage(
  deps: { db: Database }, actor: Actor, input: { name: string; pricePaise: bigint; creditMicros: bigint; active: boolean; sortOrder: number },
): Promise<TopUpPackage> {
  requirePlatformAdmin(actor);
  return deps.db.transaction(async (tx) => {
    const created = await insertPackage(tx, { id: newId('topUpPackage'), ...input });
    await recordAuditEvent(tx, {
      actor, organisationId: null, action: 'topup_package.create', resourceType: 'topup_package', resourceId: created.id,
      changes: changedFields(undefined, created, packageAuditFields),
    });
    return created;
  });
}

/** Changes a package (platform admins); purchases already made keep their terms. */
export async function updateTopUpPackage(
  deps: { db: Database },
  actor: Actor,
  packageId: string,
  changes: Partial<Pick<TopUpPackage, 'name' | 'pricePaise' | 'creditMicros' | 'active' | 'sortOrder'>>,
): Promise<TopUpPackage> {
  requirePlatformAdmin(actor);
  return deps.db.transaction(async (tx) => {
    const before = isId('topUpPackage', packageId) ? await findPackage(tx, packageId, { forUpdate: true }) : undefined;
    if (!before) throw notFound('top-up package', packageId, 'package_id');
    const after = await updatePackage(tx, packageId, changes);
    const changed = changedFields(before, after, packageAuditFields);
    if (Object.keys(changed).length > 0) {
      await recordAuditEvent(tx, { actor, organisationId: null, action: 'topup_package.update', resourceType: 'topup_package', resourceId: packageId, changes: changed });
    }
    return after;
  });
}
