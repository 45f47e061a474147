import { GatewayError } from '@gateway/errors';
import { personIdOf, requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import type { Page, PageRequest } from '../../common/domain/admin-records.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import { isId } from '../../common/domain/ids.ts';
import { notFound } from '../../common/domain/resource-access.ts';
import {
  findPerson, findPersonByEmail, insertPerson, listPeople as listPeopleRows, normalizeEmail, personView, updatePerson, type PersonView,
} from './people-store.ts';
import { emailLink, issuePasswordReset, issuedLinkUrl, type IssuedLink, type PeopleContext } from './people-context.ts';
import { issueLink } from './person-links.ts';

/** A page of every person (platform admins only). */
export async function listPeople(ctx: PeopleContext, actor: Actor, page: PageRequest): Promise<Page<PersonView>> {
  requirePlatformAdmin(actor);
  if (page.after !== undefined && !(isId('person', page.after) && await findPerson(ctx.db, page.after))) {
    throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no person has this id.', param: 'after' });
  }
  return listPeopleRows(ctx.db, page);
}

/** Creates a platform-admin person with a one-time setup link (platform admins only; 409 when the email exists). */
export async function createPlatformAdminPerson(
  ctx: PeopleContext, actor: Actor, input: { email: string }, requestOrigin: string,
): Promise<{ person: PersonView } & IssuedLink> {
  requirePlatformAdmin(actor);
  const email = normalizeEmail(input.email);
  const now = ctx.clock();
  const { person, link, token } = await ctx.db.transaction(async (tx) => {
    if (await findPersonByEmail(tx, email)) {
      throw new GatewayError('conflict', {
        publicMessage: 'A person with this email exists: make them a platform admin with PATCH /admin/v1/people/{id}.', param: 'email',
      });
    }
    const created = await insertPerson(tx, { email, platformAdmin: true });
    const issued = await issueLink(tx, { kind: 'setup', personId: created.id, issuedBy: actor, now, ttlMs: ctx.settings.linkTtlMs });
    await recordAuditEvent(tx, {
      actor, organisationId: null, action: 'person.create', resourceType: 'person', resourceId: created.id,
      changes: { email: { before: null, after: email }, platform_admin: { before: null, after: true }, setup_link: { before: null, after: issued.link.id } },
    });
    return { person: await personView(tx, created), ...issued };
  });
  const url = issuedLinkUrl(ctx, requestOrigin, token);
  const emailSent = await emailLink(ctx, {
    to: email, subject: 'Your gateway dashboard account', url, action: 'set your password',
    before: [`A platform-admin account was created for ${email} on the gateway dashboard.`], after: [],
  });
  return { person, link, url, emailSent };
}

/**
 * Disables or enables a person, or grants or drops platform admin (platform admins only).
 * Disabling ends every session at once. Nobody changes their own status or flag (409), so a
 * slip cannot lock the last person out.
 */
export async function updatePersonAccount(
  ctx: PeopleContext, actor: Actor, personId: string, change: { status?: 'active' | 'disabled' | undefined; platformAdmin?: boolean | undefined },
): Promise<PersonView> {
  requirePlatformAdmin(actor);
  return ctx.db.transaction(async (tx) => {
    const before = isId('person', personId) ? await findPerson(tx, personId, { forUpdate: true }) : undefined;
    if (!before) throw notFound('person', personId, 'id');
    if (personIdOf(actor) === personId) {
      throw new GatewayError('conflict', { publicMessage: 'You cannot disable yourself or drop your own platform-admin rights; ask another platform admin.' });
    }
    await updatePerson(tx, personId, change);
    const after = (await findPerson(tx, personId))!;
    const changes: Record<string, { before: string | boolean; after: string | boolean }> = {};
    if (before.status !== after.status) changes.status = { before: before.status, after: after.status };
    if (before.platformAdmin !== after.platformAdmin) changes.platform_admin = { before: before.platformAdmin, after: after.platformAdmin };
    if (after.status === 'disabled') await ctx.sessions.endAllOf(tx, personId);
    if (Object.keys(changes).length > 0) {
      await recordAuditEvent(tx, { actor, organisationId: null, action: 'person.update', resourceType: 'person', resourceId: personId, changes });
    }
    return personView(tx, after);
  });
}

/** A platform admin's password-reset link for anyone. */
export async function createPersonPasswordReset(ctx: PeopleContext, actor: Actor, personId: string, requestOrigin: string): Promise<IssuedLink> {
  requirePlatformAdmin(actor);
  const person = isId('person', personId) ? await findPerson(ctx.db, personId) : undefined;
  if (!person) throw notFound('person', personId, 'id');
  return issuePasswordReset(ctx, actor, person, null, requestOrigin);
}
