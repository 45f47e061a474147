import { randomBytes } from 'node:crypto';
import type { Queryable } from '@gateway/db';
import { hashSecret, hashesEqual } from '@gateway/secrets';
import { personIdOf, tokenIdOf, type Actor, type OrganisationRole } from '../../common/domain/actor.ts';
import { newId } from '../../common/domain/ids.ts';

/**
 * What a one-time link does: 'invitation' joins an organisation with a role (and sets the
 * password of a person who has none), 'password_reset' sets a new password, 'setup' sets the
 * first platform admin's password.
 */
export type PersonLinkKind = 'invitation' | 'password_reset' | 'setup';

/** Where a link stands: 'pending' can still be followed; the others cannot. */
export type PersonLinkStatus = 'pending' | 'used' | 'revoked' | 'expired';

/** A one-time link as stored (its token is not: only the token's SHA-256). */
export interface PersonLink {
  id: string;
  kind: PersonLinkKind;
  personId: string;
  /** The person's email (joined from people). */
  email: string;
  /** For an invitation: the organisation and role it grants; null otherwise. */
  organisationId: string | null;
  organisationName: string | null;
  role: OrganisationRole | null;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  revokedAt: Date | null;
}

/** A link token: 32 random bytes in base64url (43 characters). */
const linkTokenPattern = /^[A-Za-z0-9_-]{43}$/;

interface LinkRow {
  id: string;
  kind: PersonLinkKind;
  person_id: string;
  email: string;
  organisation_id: string | null;
  organisation_name: string | null;
  role: OrganisationRole | null;
  created_at: Date;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
  token_hash: string;
}

const selectLink = `
  SELECT l.id, l.kind, l.person_id, p.email, l.organisation_id, o.name AS organisation_name, l.role, l.created_at, l.expires_at,
         l.used_at, l.revoked_at, l.token_hash
  FROM person_links l JOIN people p ON p.id = l.person_id LEFT JOIN organisations o ON o.id = l.organisation_id`;

function toLink(row: LinkRow): PersonLink {
  return {
    id: row.id, kind: row.kind, personId: row.person_id, email: row.email, organisationId: row.organisation_id,
    organisationName: row.organisation_name, role: row.role, createdAt: row.created_at, expiresAt: row.expires_at,
    usedAt: row.used_at, revokedAt: row.revoked_at,
  };
}

/** Where a link stands at `now`. */
export function linkStatus(link: PersonLink, now: Date): PersonLinkStatus {
  if (link.usedAt !== null) return 'used';
  if (link.revokedAt !== null) return 'revoked';
  return link.expiresAt.getTime() <= now.getTime() ? 'expired' : 'pending';
}

/**
 * Issues a one-time link valid for `ttlMs`; returns it with its token, which is shown once (in
 * the answer, or emailed) and stored only as its SHA-256.
 */
export async function issueLink(
  tx: Queryable,
  input: {
    kind: PersonLinkKind; personId: string; organisationId?: string; role?: OrganisationRole; issuedBy: Actor; now: Date; ttlMs: number;
  },
): Promise<{ link: PersonLink; token: string }> {
  const token = randomBytes(32).toString('base64url');
  const id = newId('invitation');
  await tx.query(
    `INSERT INTO person_links (id, token_hash, kind, person_id, organisation_id, role, issued_by_kind, issued_by_id, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      id, hashSecret(token), input.kind, input.personId, input.organisationId ?? null, input.role ?? null, input.issuedBy.kind,
      personIdOf(input.issuedBy) ?? tokenIdOf(input.issuedBy), input.now, new Date(input.now.getTime() + input.ttlMs),
    ],
  );
  const { rows } = await tx.query<LinkRow>(`${selectLink} WHERE l.id = $1`, [id]);
  return { link: toLink(rows[0]!), token };
}

/**
 * The link a token opens if it can still be followed at `now` (not used, revoked or expired);
 * undefined otherwise. `forUpdate` locks it, so two tabs cannot both use it.
 */
export async function findPendingLink(db: Queryable, token: string, now: Date, options: { forUpdate?: boolean } = {}): Promise<PersonLink | undefined> {
  if (!linkTokenPattern.test(token)) return undefined;
  const tokenHash = hashSecret(token);
  const { rows } = await db.query<LinkRow>(`${selectLink} WHERE l.token_hash = $1${options.forUpdate ? ' FOR UPDATE OF l' : ''}`, [tokenHash]);
  const row = rows[0];
  if (!row || !hashesEqual(row.token_hash, tokenHash)) return undefined;
  const link = toLink(row);
  return linkStatus(link, now) === 'pending' ? link : undefined;
}

/** An invitation of this organisation by id (any status), or undefined. */
export async function findInvitation(db: Queryable, organisationId: string, id: string): Promise<PersonLink | undefined> {
  const { rows } = await db.query<LinkRow>(`${selectLink} WHERE l.id = $1 AND l.organisation_id = $2 AND l.kind = 'invitation'`, [id, organisationId]);
  return rows[0] && toLink(rows[0]);
}

/** An organisation's invitations that can still be followed, oldest first. */
export async function listPendingInvitations(db: Queryable, organisationId: string, now: Date): Promise<PersonLink[]> {
  const { rows } = await db.query<LinkRow>(
    `${selectLink}
     WHERE l.organisation_id = $1 AND l.kind = 'invitation' AND l.used_at IS NULL AND l.revoked_at IS NULL AND l.expires_at > $2
     ORDER BY l.created_at, l.id`,
    [organisationId, now],
  );
  return rows.map(toLink);
}

/** Marks a link used at `now`. */
export async function markLinkUsed(tx: Queryable, id: string, now: Date): Promise<void> {
  await tx.query('UPDATE person_links SET used_at = $2 WHERE id = $1', [id, now]);
}

/** Revokes a link at `now` (no effect on a used or revoked one). */
export async function revokeLink(tx: Queryable, id: string, now: Date): Promise<void> {
  await tx.query('UPDATE person_links SET revoked_at = $2 WHERE id = $1 AND used_at IS NULL AND revoked_at IS NULL', [id, now]);
}

/**
 * Revokes a person's links that can still be followed, of one kind (and organisation, for
 * invitations): a new invitation or reset replaces the one before it. Returns the ids revoked.
 */
export async function revokePendingLinks(
  tx: Queryable, input: { personId: string; kind: PersonLinkKind; organisationId?: string; now: Date },
): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    `UPDATE person_links SET revoked_at = $4
     WHERE person_id = $1 AND kind = $2 AND ($3::text IS NULL OR organisation_id = $3) AND used_at IS NULL AND revoked_at IS NULL
     RETURNING id`,
    [input.personId, input.kind, input.organisationId ?? null, input.now],
  );
  return rows.map((row) => row.id);
}
