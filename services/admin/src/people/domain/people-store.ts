import type { Queryable } from '@gateway/db';
import type { OrganisationRole } from '../../common/domain/actor.ts';
import type { Page, PageRequest } from '../../common/domain/admin-records.ts';
import { newId } from '../../common/domain/ids.ts';

/** A person as stored (the password hash never leaves the domain). */
export interface PersonRecord {
  id: string;
  /** Lower-cased and trimmed. */
  email: string;
  displayName: string;
  /** argon2id PHC string; null until the person followed an invitation or setup link. */
  passwordHash: string | null;
  platformAdmin: boolean;
  status: 'active' | 'disabled';
  createdAt: Date;
}

/** One organisation a person belongs to, with their role there. */
interface Membership {
  organisationId: string;
  organisationName: string;
  role: OrganisationRole;
  joinedAt: Date;
}

/** What may be shown about a person: never the password or its hash. */
export interface PersonView {
  id: string;
  email: string;
  displayName: string;
  platformAdmin: boolean;
  status: 'active' | 'disabled';
  /** Whether the person has a password (false: invited or set up, the link not followed yet). */
  passwordSet: boolean;
  createdAt: Date;
  /** By organisation creation order. */
  memberships: Membership[];
}

/** A member of one organisation, as its members list shows them. */
export interface Member {
  personId: string;
  email: string;
  displayName: string;
  role: OrganisationRole;
  joinedAt: Date;
}

interface PersonRow {
  id: string;
  email: string;
  display_name: string;
  password_hash: string | null;
  platform_admin: boolean;
  status: 'active' | 'disabled';
  created_at: Date;
}

const selectPerson = 'SELECT id, email, display_name, password_hash, platform_admin, status, created_at FROM people';

function toPerson(row: PersonRow): PersonRecord {
  return {
    id: row.id, email: row.email, displayName: row.display_name, passwordHash: row.password_hash,
    platformAdmin: row.platform_admin, status: row.status, createdAt: row.created_at,
  };
}

/** An email as people are found by it: trimmed and lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** The person with this id, or undefined. `forUpdate` locks the row until the transaction ends. */
export async function findPerson(db: Queryable, id: string, options: { forUpdate?: boolean } = {}): Promise<PersonRecord | undefined> {
  const { rows } = await db.query<PersonRow>(`${selectPerson} WHERE id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0] && toPerson(rows[0]);
}

/** The person with this (normalized) email, or undefined. */
export async function findPersonByEmail(db: Queryable, email: string, options: { forUpdate?: boolean } = {}): Promise<PersonRecord | undefined> {
  const { rows } = await db.query<PersonRow>(`${selectPerson} WHERE email = $1${options.forUpdate ? ' FOR UPDATE' : ''}`, [email]);
  return rows[0] && toPerson(rows[0]);
}

/** Whether anybody exists yet (the first start creates the first platform admin when not). */
export async function anyPersonExists(db: Queryable): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM people LIMIT 1');
  return rows.length > 0;
}

/** Creates a person without a password (they set it by following a link). */
export async function insertPerson(tx: Queryable, input: { email: string; platformAdmin: boolean }): Promise<PersonRecord> {
  const { rows } = await tx.query<PersonRow>(
    `INSERT INTO people (id, email, platform_admin) VALUES ($1, $2, $3)
     RETURNING id, email, display_name, password_hash, platform_admin, status, created_at`,
    [newId('person'), input.email, input.platformAdmin],
  );
  return toPerson(rows[0]!);
}

/** Sets a person's password hash (and display name, when given), at `now`. */
export async function setPasswordHash(tx: Queryable, personId: string, passwordHash: string, now: Date, displayName?: string): Promise<void> {
  await tx.query(
    'UPDATE people SET password_hash = $2, password_changed_at = $3, display_name = COALESCE($4, display_name) WHERE id = $1',
    [personId, passwordHash, now, displayName ?? null],
  );
}

/** Changes a person's status and platform-admin flag (fields left undefined keep their value). */
export async function updatePerson(
  tx: Queryable, personId: string, change: { status?: 'active' | 'disabled' | undefined; platformAdmin?: boolean | undefined },
): Promise<void> {
  await tx.query(
    'UPDATE people SET status = COALESCE($2, status), platform_admin = COALESCE($3, platform_admin) WHERE id = $1',
    [personId, change.status ?? null, change.platformAdmin ?? null],
  );
}

/** A person's memberships with their organisations' names, by organisation creation order. */
async function membershipsOf(db: Queryable, personId: string): Promise<Membership[]> {
  const { rows } = await db.query<{ organisation_id: string; name: string; role: OrganisationRole; created_at: Date }>(
    `SELECT m.organisation_id, o.name, m.role, m.created_at
     FROM memberships m JOIN organisations o ON o.id = m.organisation_id
     WHERE m.person_id = $1 ORDER BY o.created_at, o.id`,
    [personId],
  );
  return rows.map((row) => ({ organisationId: row.organisation_id, organisationName: row.name, role: row.role, joinedAt: row.created_at }));
}

/** A person's role in each of their organisations, by organisation id (read on every request: changes apply at once). */
export async function rolesOf(db: Queryable, personId: string): Promise<Map<string, OrganisationRole>> {
  const { rows } = await db.query<{ organisation_id: string; role: OrganisationRole }>(
    'SELECT organisation_id, role FROM memberships WHERE person_id = $1', [personId],
  );
  return new Map(rows.map((row) => [row.organisation_id, row.role]));
}

/** What may be shown about a person, with their memberships. */
export async function personView(db: Queryable, person: PersonRecord): Promise<PersonView> {
  return {
    id: person.id, email: person.email, displayName: person.displayName, platformAdmin: person.platformAdmin, status: person.status,
    passwordSet: person.passwordHash !== null, createdAt: person.createdAt, memberships: await membershipsOf(db, person.id),
  };
}

/** A page of people in creation order, after the person `after`. */
export async function listPeople(db: Queryable, page: PageRequest): Promise<Page<PersonView>> {
  const { rows } = await db.query<PersonRow>(
    `${selectPerson}
     WHERE $1::text IS NULL OR (created_at, id) > (SELECT created_at, id FROM people WHERE id = $1)
     ORDER BY created_at, id LIMIT $2`,
    [page.after ?? null, page.limit + 1],
  );
  const items = await Promise.all(rows.slice(0, page.limit).map((row) => personView(db, toPerson(row))));
  return { items, hasMore: rows.length > page.limit };
}

/** An organisation's members, in the order they joined. */
export async function listMembers(db: Queryable, organisationId: string): Promise<Member[]> {
  const { rows } = await db.query<{ person_id: string; email: string; display_name: string; role: OrganisationRole; created_at: Date }>(
    `SELECT m.person_id, p.email, p.display_name, m.role, m.created_at
     FROM memberships m JOIN people p ON p.id = m.person_id
     WHERE m.organisation_id = $1 ORDER BY m.created_at, m.person_id`,
    [organisationId],
  );
  return rows.map((row) => ({ personId: row.person_id, email: row.email, displayName: row.display_name, role: row.role, joinedAt: row.created_at }));
}

/** One member of an organisation, or undefined when the person does not belong to it. */
export async function findMember(db: Queryable, organisationId: string, personId: string): Promise<Member | undefined> {
  const { rows } = await db.query<{ email: string; display_name: string; role: OrganisationRole; created_at: Date }>(
    `SELECT p.email, p.display_name, m.role, m.created_at
     FROM memberships m JOIN people p ON p.id = m.person_id
     WHERE m.organisation_id = $1 AND m.person_id = $2`,
    [organisationId, personId],
  );
  const row = rows[0];
  return row && { personId, email: row.email, displayName: row.display_name, role: row.role, joinedAt: row.created_at };
}

/** Adds a membership; a person already in the organisation keeps the role they have. */
export async function insertMembership(tx: Queryable, input: { personId: string; organisationId: string; role: OrganisationRole; now: Date }): Promise<void> {
  await tx.query(
    `INSERT INTO memberships (person_id, organisation_id, role, created_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (person_id, organisation_id) DO NOTHING`,
    [input.personId, input.organisationId, input.role, input.now],
  );
}

/** Changes a member's role. */
export async function setMembershipRole(tx: Queryable, organisationId: string, personId: string, role: OrganisationRole): Promise<void> {
  await tx.query('UPDATE memberships SET role = $3 WHERE organisation_id = $1 AND person_id = $2', [organisationId, personId, role]);
}

/** Removes a member from an organisation. */
export async function deleteMembership(tx: Queryable, organisationId: string, personId: string): Promise<void> {
  await tx.query('DELETE FROM memberships WHERE organisation_id = $1 AND person_id = $2', [organisationId, personId]);
}

/** How many owners an organisation has. */
export async function countOwners(tx: Queryable, organisationId: string): Promise<number> {
  const { rows } = await tx.query<{ count: bigint }>(
    "SELECT count(*)::bigint AS count FROM memberships WHERE organisation_id = $1 AND role = 'owner'", [organisationId],
  );
  return Number(rows[0]!.count);
}

/** Holds the lock that makes replicas starting together create one first person, until the transaction ends. */
export async function lockFirstPersonCreation(tx: Queryable): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['gateway-admin:first-person']);
}
