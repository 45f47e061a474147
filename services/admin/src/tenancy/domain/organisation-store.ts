import type { Queryable } from '@gateway/db';
import type { BillingMode, Organisation, OrganisationStatus, Page, PageRequest } from '../../common/domain/admin-records.ts';

interface OrganisationRow {
  id: string;
  name: string;
  status: OrganisationStatus;
  billing_mode: BillingMode;
  rpm_limit: number;
  store_responses: boolean;
  response_retention_s: number | null;
  allowed: string[];
  created_at: Date;
}

const selectOrganisation = `
  SELECT o.id, o.name, o.status, o.billing_mode, o.rpm_limit, o.store_responses, o.response_retention_s, o.created_at,
         ARRAY(SELECT m.gateway_model_slug FROM organisation_allowed_models m
               WHERE m.organisation_id = o.id ORDER BY m.gateway_model_slug) AS allowed
  FROM organisations o`;

function toOrganisation(row: OrganisationRow): Organisation {
  return {
    id: row.id,
    name: row.name,
    status: row.status,
    billingMode: row.billing_mode,
    rpmLimit: row.rpm_limit,
    allowedGatewayModels: row.allowed,
    storeResponses: row.store_responses,
    responseRetentionS: row.response_retention_s,
    createdAt: row.created_at,
  };
}

/** Inserts a new organisation and its allowed models (slugs must exist). */
export async function insertOrganisation(
  tx: Queryable,
  organisation: Omit<Organisation, 'createdAt' | 'storeResponses' | 'responseRetentionS'>,
): Promise<void> {
  await tx.query(
    'INSERT INTO organisations (id, name, status, billing_mode, rpm_limit) VALUES ($1, $2, $3, $4, $5)',
    [organisation.id, organisation.name, organisation.status, organisation.billingMode, organisation.rpmLimit],
  );
  await replaceAllowedModels(tx, organisation.id, organisation.allowedGatewayModels);
}

/** Replaces the set of gateway models an organisation may use. */
export async function replaceAllowedModels(tx: Queryable, organisationId: string, slugs: readonly string[]): Promise<void> {
  await tx.query('DELETE FROM organisation_allowed_models WHERE organisation_id = $1', [organisationId]);
  if (slugs.length === 0) return;
  await tx.query(
    `INSERT INTO organisation_allowed_models (organisation_id, gateway_model_slug)
     SELECT $1, slug FROM unnest($2::text[]) AS slug`,
    [organisationId, [...new Set(slugs)]],
  );
}

/** The organisation with this id, or undefined. `forUpdate` locks its row until the transaction ends. */
export async function findOrganisation(db: Queryable, id: string, options: { forUpdate?: boolean } = {}): Promise<Organisation | undefined> {
  const lock = options.forUpdate ? ' FOR UPDATE OF o' : '';
  const { rows } = await db.query<OrganisationRow>(`${selectOrganisation} WHERE o.id = $1${lock}`, [id]);
  return rows[0] ? toOrganisation(rows[0]) : undefined;
}

/** Whether an organisation with this id exists. */
export async function organisationExists(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM organisations WHERE id = $1', [id]);
  return rows.length > 0;
}

/** A page of organisations in creation order, after the organisation `after` (which must exist). */
export async function listOrganisations(db: Queryable, page: PageRequest): Promise<Page<Organisation>> {
  const { rows } = await db.query<OrganisationRow>(
    `${selectOrganisation}
     WHERE $1::text IS NULL OR (o.created_at, o.id) > (SELECT a.created_at, a.id FROM organisations a WHERE a.id = $1)
     ORDER BY o.created_at, o.id
     LIMIT $2`,
    [page.after ?? null, page.limit + 1],
  );
  return { items: rows.slice(0, page.limit).map(toOrganisation), hasMore: rows.length > page.limit };
}

/** The fields of an organisation a platform admin may change. */
export interface OrganisationChanges {
  name?: string | undefined;
  status?: OrganisationStatus | undefined;
  billingMode?: BillingMode | undefined;
  rpmLimit?: number | undefined;
}

/** How an organisation's Responses are stored: whether at all, and its own retention (null: the platform's). */
export interface ResponseStorageSettings {
  storeResponses: boolean;
  responseRetentionS: number | null;
}

/** Writes an organisation's response storage settings. */
export async function updateResponseStorage(tx: Queryable, id: string, settings: ResponseStorageSettings): Promise<void> {
  await tx.query(
    'UPDATE organisations SET store_responses = $2, response_retention_s = $3, updated_at = clock_timestamp() WHERE id = $1',
    [id, settings.storeResponses, settings.responseRetentionS],
  );
}

/** Writes changed scalar fields of an organisation (allowed models are replaced separately). */
export async function updateOrganisationFields(tx: Queryable, id: string, changes: OrganisationChanges): Promise<void> {
  await tx.query(
    `UPDATE organisations SET
       name = COALESCE($2, name),
       status = COALESCE($3, status),
       billing_mode = COALESCE($4, billing_mode),
       rpm_limit = COALESCE($5::integer, rpm_limit),
       updated_at = clock_timestamp()
     WHERE id = $1`,
    [id, changes.name ?? null, changes.status ?? null, changes.billingMode ?? null, changes.rpmLimit ?? null],
  );
}

/** Names of organisations by id (ids unknown to the admin database are absent). */
export async function organisationNamesById(db: Queryable, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ id: string; name: string }>(
    'SELECT id, name FROM organisations WHERE id IN (SELECT unnest($1::text[]))', [[...ids]],
  );
  return new Map(rows.map((row) => [row.id, row.name]));
}
