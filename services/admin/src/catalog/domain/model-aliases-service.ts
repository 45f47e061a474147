import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { requirePlatformAdmin, systemActor, type Actor } from '../../common/domain/actor.ts';
import type { Propagation } from '../../common/domain/admin-records.ts';
import { changedFields, recordAuditEvent } from '../../common/domain/audit-log.ts';
import type { ConfigPublisher } from '../../common/domain/config-publisher.ts';
import { bumpConfigVersion, configChange } from './config-snapshot.ts';
import { findGatewayModel } from './gateway-model-store.ts';
import {
  deleteOrganisationModelAlias, deletePlatformModelAlias, findOrganisationModelAlias, findPlatformModelAlias, insertMissingPlatformModelAliases,
  listOrganisationModelAliases, listPlatformModelAliases, upsertOrganisationModelAlias, upsertPlatformModelAlias, type ModelAlias,
} from './model-alias-store.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';

/**
 * The rule of an alias name (also a CHECK constraint): what agents send as built-in names,
 * e.g. `claude-sonnet-4-5-20250929` or `gpt-5-codex`; case counts, as the proxy matches exactly.
 */
const modelAliasPattern = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$/;

/** What the model aliases aggregate is built from. */
export interface ModelAliasesServiceDeps {
  db: Database;
  publisher: ConfigPublisher;
  access: ResourceAccess;
}

/** A set alias, whether the call created it, and how far the change has reached the proxies. */
export interface ModelAliasOutcome {
  alias: ModelAlias;
  created: boolean;
  propagation: Propagation;
}

/** The audit fields of an alias, under their API names. */
const aliasAuditFields = { gatewayModelSlug: 'gateway_model' };

function aliasNotFound(alias: string): GatewayError {
  return new GatewayError('not_found', { publicMessage: `No model alias is named "${alias.slice(0, 128)}".`, param: 'alias' });
}

/** The model aliases aggregate: platform-wide aliases (platform admins) and each organisation's own (its owners) (route tag "model aliases"). */
export function createModelAliasesService({ db, publisher, access }: ModelAliasesServiceDeps) {
  /**
   * Checks an alias name and its target: the name matches the alias rule and is no gateway
   * model's slug (a slug always means its own model: docs/model-aliases.md), and the target is an
   * existing gateway model. Returns the target's kind.
   */
  async function requireValidAlias(tx: Queryable, alias: string, slug: string): Promise<'chat' | 'embedding'> {
    if (!modelAliasPattern.test(alias)) {
      throw new GatewayError('invalid_request', {
        publicMessage: 'Invalid request: alias: must be 1 to 128 characters of A-Z, a-z, 0-9 and . _ : / @ -, starting with a letter or digit.',
        param: 'alias',
      });
    }
    if (await findGatewayModel(tx, alias) !== undefined) {
      throw new GatewayError('conflict', {
        publicMessage: `The alias "${alias}" is the slug of a gateway model; a slug always names its own model and cannot be an alias.`,
        param: 'alias',
      });
    }
    const target = await findGatewayModel(tx, slug);
    if (target === undefined) {
      throw new GatewayError('invalid_request', {
        publicMessage: `Invalid request: gateway_model: no gateway model has the slug "${slug.slice(0, 128)}".`, param: 'gateway_model',
      });
    }
    return target.kind;
  }

  return {
    /** Every platform alias (any signed-in caller may read them: names and slugs only, nothing upstream). */
    listPlatformModelAliases: (_actor: Actor) => listPlatformModelAliases(db),

    /** Creates or retargets a platform alias and pushes it to the proxies (platform admins only). */
    async putPlatformModelAlias(actor: Actor, alias: string, slug: string): Promise<ModelAliasOutcome> {
      requirePlatformAdmin(actor);
      const { version, stored, created } = await db.transaction(async (tx) => {
        await requireValidAlias(tx, alias, slug);
        const before = await findPlatformModelAlias(tx, alias);
        const after = await upsertPlatformModelAlias(tx, alias, slug);
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: before ? 'model_alias.update' : 'model_alias.create', resourceType: 'model_alias', resourceId: alias,
          changes: changedFields(before, after, aliasAuditFields),
        });
        return { version: await bumpConfigVersion(tx, [configChange('platform_model_alias', alias)]), stored: after, created: before === undefined };
      });
      return { alias: stored, created, propagation: await publisher.publish(version) };
    },

    /** Deletes a platform alias (not_found when there is none) and pushes the removal. */
    async deletePlatformModelAlias(actor: Actor, alias: string): Promise<Propagation> {
      requirePlatformAdmin(actor);
      const version = await db.transaction(async (tx) => {
        const deleted = await deletePlatformModelAlias(tx, alias);
        if (deleted === undefined) throw aliasNotFound(alias);
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'model_alias.delete', resourceType: 'model_alias', resourceId: alias,
          changes: changedFields(deleted, {}, aliasAuditFields),
        });
        return bumpConfigVersion(tx, [configChange('platform_model_alias', alias)]);
      });
      return publisher.publish(version);
    },

    /**
     * Seeds platform aliases from `names` to `slug` as the system (the embedded demo's agent
     * names), leaving every name that is already an alias or a slug as it is. Returns the names added.
     */
    async seedPlatformModelAliases(names: readonly string[], slug: string): Promise<string[]> {
      return db.transaction(async (tx) => {
        const added = await insertMissingPlatformModelAliases(tx, names, slug);
        for (const alias of added) {
          await recordAuditEvent(tx, {
            actor: systemActor, organisationId: null, action: 'model_alias.create', resourceType: 'model_alias', resourceId: alias,
            changes: { gateway_model: { before: null, after: slug } },
          });
        }
        if (added.length > 0) await bumpConfigVersion(tx, added.map((alias) => configChange('platform_model_alias', alias)));
        return added;
      });
    },

    /** The organisation's own aliases. */
    async listOrganisationModelAliases(actor: Actor, organisationId: string): Promise<ModelAlias[]> {
      await access.requireOrganisation(actor, organisationId);
      return listOrganisationModelAliases(db, organisationId);
    },

    /**
     * Creates or retargets one of the organisation's aliases and pushes the organisation. Besides
     * the rules of every alias, the target must be among the organisation's allowed models (an
     * alias to a model it may not use would only ever answer 404), and an alias overriding a
     * platform alias must reach a model of the same kind (a chat name stays a chat name).
     */
    async putOrganisationModelAlias(actor: Actor, organisationId: string, alias: string, slug: string): Promise<ModelAliasOutcome> {
      const { version, stored, created } = await db.transaction(async (tx) => {
        const organisation = await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
        const kind = await requireValidAlias(tx, alias, slug);
        if (!organisation.allowedGatewayModels.includes(slug)) {
          throw new GatewayError('invalid_request', {
            publicMessage: `Invalid request: gateway_model: "${slug}" is not among the organisation's allowed gateway models.`, param: 'gateway_model',
          });
        }
        const platformAlias = await findPlatformModelAlias(tx, alias);
        if (platformAlias !== undefined) {
          const platformKind = (await findGatewayModel(tx, platformAlias.gatewayModelSlug))?.kind;
          if (platformKind !== undefined && platformKind !== kind) {
            throw new GatewayError('invalid_request', {
              publicMessage: `Invalid request: gateway_model: the platform alias "${alias}" reaches ${platformKind === 'chat' ? 'a chat' : 'an embedding'} model; its override must too.`,
              param: 'gateway_model',
            });
          }
        }
        const before = await findOrganisationModelAlias(tx, organisationId, alias);
        const after = await upsertOrganisationModelAlias(tx, organisationId, alias, slug);
        await recordAuditEvent(tx, {
          actor, organisationId, action: before ? 'model_alias.update' : 'model_alias.create', resourceType: 'model_alias', resourceId: alias,
          changes: changedFields(before, after, aliasAuditFields),
        });
        return { version: await bumpConfigVersion(tx, [configChange('organisation', organisationId)]), stored: after, created: before === undefined };
      });
      return { alias: stored, created, propagation: await publisher.publish(version) };
    },

    /** Deletes one of the organisation's aliases (not_found when it has none of that name) and pushes the organisation. */
    async deleteOrganisationModelAlias(actor: Actor, organisationId: string, alias: string): Promise<Propagation> {
      const version = await db.transaction(async (tx) => {
        await access.requireOrganisation(actor, organisationId, tx, { forUpdate: true });
        const deleted = await deleteOrganisationModelAlias(tx, organisationId, alias);
        if (deleted === undefined) throw aliasNotFound(alias);
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'model_alias.delete', resourceType: 'model_alias', resourceId: alias,
          changes: changedFields(deleted, {}, aliasAuditFields),
        });
        return bumpConfigVersion(tx, [configChange('organisation', organisationId)]);
      });
      return publisher.publish(version);
    },
  };
}
