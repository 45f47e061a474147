import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { isPlatformActor, requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import type { Page, PageRequest } from '../../common/domain/admin-records.ts';
import { findAdminToken, issueAdminToken, listAdminTokens, revokeAdminToken, type AdminTokenInfo } from './admin-tokens.ts';
import { changedFields, recordAuditEvent } from '../../common/domain/audit-log.ts';
import { isId } from '../../common/domain/ids.ts';
import { notFound, type ResourceAccess } from '../../common/domain/resource-access.ts';

/** What the admin tokens aggregate is built from. */
export interface AdminTokensServiceDeps {
  db: Database;
  access: ResourceAccess;
}

/** The token fields the audit log records, under their API names. */
const tokenAuditFields = { name: 'name', organisationId: 'organisation_id', hint: 'hint', revokedAt: 'revoked_at' };

/** Admin-API tokens: platform-admin and organisation tokens, issued, listed and revoked (route tag "tokens"). */
export function createAdminTokensService({ db, access }: AdminTokensServiceDeps) {
  const { requireOrganisation } = access;

  /** A token-list cursor must name a token of the same list. */
  async function requireTokenCursor(page: PageRequest, organisationId: string | null): Promise<void> {
    if (page.after === undefined) return;
    const after = isId('adminToken', page.after) ? await findAdminToken(db, page.after) : undefined;
    if (!after || after.organisationId !== organisationId) {
      throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no token of this list has this id.', param: 'after' });
    }
  }

  return {
    /** Issues a platform-admin token (secret returned once). */
    async createPlatformAdminToken(actor: Actor, input: { name: string }): Promise<{ token: AdminTokenInfo; secret: string }> {
      requirePlatformAdmin(actor);
      return db.transaction(async (tx) => {
        const issued = await issueAdminToken(tx, { name: input.name, organisationId: null, origin: actor.kind === 'cli' ? 'cli' : 'api' });
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'admin_token.create', resourceType: 'admin_token', resourceId: issued.token.id,
          changes: changedFields(undefined, issued.token, tokenAuditFields),
        });
        return issued;
      });
    },

    /** A page of platform-admin tokens in creation order (revoked ones included). */
    async listPlatformAdminTokens(actor: Actor, page: PageRequest): Promise<Page<AdminTokenInfo>> {
      requirePlatformAdmin(actor);
      await requireTokenCursor(page, null);
      return listAdminTokens(db, null, page);
    },

    /** Revokes a platform-admin token (never the last one). An organisation token sees none: not_found. */
    async revokePlatformAdminToken(actor: Actor, tokenId: string): Promise<AdminTokenInfo> {
      return db.transaction(async (tx) => {
        const token = isPlatformActor(actor) && isId('adminToken', tokenId) ? await findAdminToken(tx, tokenId) : undefined;
        if (!token || token.organisationId !== null) throw notFound('platform-admin token', tokenId, 'id');
        const { before, after } = await revokeAdminToken(tx, tokenId);
        if (before.revokedAt === null) {
          await recordAuditEvent(tx, {
            actor, organisationId: null, action: 'admin_token.revoke', resourceType: 'admin_token', resourceId: tokenId,
            changes: changedFields(before, after, tokenAuditFields),
          });
        }
        return after;
      });
    },

    /** Issues a token that sees and changes only this organisation (platform admins only). */
    async createOrganisationToken(actor: Actor, organisationId: string, input: { name: string }): Promise<{ token: AdminTokenInfo; secret: string }> {
      await requireOrganisation(actor, organisationId);
      requirePlatformAdmin(actor);
      return db.transaction(async (tx) => {
        const issued = await issueAdminToken(tx, { name: input.name, organisationId, origin: actor.kind === 'cli' ? 'cli' : 'api' });
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'admin_token.create', resourceType: 'admin_token', resourceId: issued.token.id,
          changes: changedFields(undefined, issued.token, tokenAuditFields),
        });
        return issued;
      });
    },

    /** A page of an organisation's tokens in creation order (revoked ones included). */
    async listOrganisationTokens(actor: Actor, organisationId: string, page: PageRequest): Promise<Page<AdminTokenInfo>> {
      await requireOrganisation(actor, organisationId);
      await requireTokenCursor(page, organisationId);
      return listAdminTokens(db, organisationId, page);
    },

    /** Revokes one of an organisation's tokens (its own automation may revoke them too). */
    async revokeOrganisationToken(actor: Actor, organisationId: string, tokenId: string): Promise<AdminTokenInfo> {
      await requireOrganisation(actor, organisationId);
      return db.transaction(async (tx) => {
        const token = isId('adminToken', tokenId) ? await findAdminToken(tx, tokenId) : undefined;
        if (!token || token.organisationId !== organisationId) throw notFound('token of this organisation', tokenId, 'token_id');
        const { before, after } = await revokeAdminToken(tx, tokenId);
        if (before.revokedAt === null) {
          await recordAuditEvent(tx, {
            actor, organisationId, action: 'admin_token.revoke', resourceType: 'admin_token', resourceId: tokenId,
            changes: changedFields(before, after, tokenAuditFields),
          });
        }
        return after;
      });
    },
  };
}
