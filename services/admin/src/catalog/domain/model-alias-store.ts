// The SQL of model aliases (migrations/0014_model_aliases.sql): the platform's, and each
// organisation's own. The rules (who may set them, what a valid one is) are model-aliases-service.ts's.
import type { Queryable } from '@gateway/db';

/** A model alias as stored: the name a client may send and the gateway model slug it reaches. */
export interface ModelAlias {
  alias: string;
  gatewayModelSlug: string;
  createdAt: Date;
  updatedAt: Date;
}

interface ModelAliasRow {
  alias: string;
  gateway_model_slug: string;
  created_at: Date;
  updated_at: Date;
}

function toModelAlias(row: ModelAliasRow): ModelAlias {
  return { alias: row.alias, gatewayModelSlug: row.gateway_model_slug, createdAt: row.created_at, updatedAt: row.updated_at };
}

/** Platform aliases as (name, slug) pairs by name: all of them, or only those among `names` that exist. */
export async function platformModelAliasesNamed(db: Queryable, names?: readonly string[]): Promise<Array<[string, string]>> {
  const { rows } = names === undefined
    ? await db.query<{ alias: string; gateway_model_slug: string }>('SELECT alias, gateway_model_slug FROM platform_model_aliases ORDER BY alias')
    : await db.query<{ alias: string; gateway_model_slug: string }>(
      'SELECT alias, gateway_model_slug FROM platform_model_aliases WHERE alias = ANY($1::text[]) ORDER BY alias', [[...names]],
    );
  return rows.map((row) => [row.alias, row.gateway_model_slug]);
}

/** Every platform alias, by name. */
export async function listPlatformModelAliases(db: Queryable): Promise<ModelAlias[]> {
  const { rows } = await db.query<ModelAliasRow>('SELECT alias, gateway_model_slug, created_at, updated_at FROM platform_model_aliases ORDER BY alias');
  return rows.map(toModelAlias);
}

/** The platform alias of this name, or undefined. */
export async function findPlatformModelAlias(db: Queryable, alias: string): Promise<ModelAlias | undefined> {
  const { rows } = await db.query<ModelAliasRow>(
    'SELECT alias, gateway_model_slug, created_at, updated_at FROM platform_model_aliases WHERE alias = $1', [alias],
  );
  return rows[0] ? toModelAlias(rows[0]) : undefined;
}

/** Creates or retargets a platform alias; returns it as stored. */
export async function upsertPlatformModelAlias(tx: Queryable, alias: string, slug: string): Promise<ModelAlias> {
  const { rows } = await tx.query<ModelAliasRow>(
    `INSERT INTO platform_model_aliases (alias, gateway_model_slug) VALUES ($1, $2)
     ON CONFLICT (alias) DO UPDATE SET gateway_model_slug = EXCLUDED.gateway_model_slug, updated_at = clock_timestamp()
     RETURNING alias, gateway_model_slug, created_at, updated_at`,
    [alias, slug],
  );
  return toModelAlias(rows[0]!);
}

/** Deletes a platform alias; returns what was deleted, or undefined when there was none. */
export async function deletePlatformModelAlias(tx: Queryable, alias: string): Promise<ModelAlias | undefined> {
  const { rows } = await tx.query<ModelAliasRow>(
    'DELETE FROM platform_model_aliases WHERE alias = $1 RETURNING alias, gateway_model_slug, created_at, updated_at', [alias],
  );
  return rows[0] ? toModelAlias(rows[0]) : undefined;
}

/** An organisation's own aliases, by name. */
export async function listOrganisationModelAliases(db: Queryable, organisationId: string): Promise<ModelAlias[]> {
  const { rows } = await db.query<ModelAliasRow>(
    'SELECT alias, gateway_model_slug, created_at, updated_at FROM organisation_model_aliases WHERE organisation_id = $1 ORDER BY alias',
    [organisationId],
  );
  return rows.map(toModelAlias);
}

/** The organisation's alias of this name, or undefined. */
export async function findOrganisationModelAlias(db: Queryable, organisationId: string, alias: string): Promise<ModelAlias | undefined> {
  const { rows } = await db.query<ModelAliasRow>(
    'SELECT alias, gateway_model_slug, created_at, updated_at FROM organisation_model_aliases WHERE organisation_id = $1 AND alias = $2',
    [organisationId, alias],
  );
  return rows[0] ? toModelAlias(rows[0]) : undefined;
}

/** Creates or retargets an organisation's alias; returns it as stored. */
export async function upsertOrganisationModelAlias(tx: Queryable, organisationId: string, alias: string, slug: string): Promise<ModelAlias> {
  const { rows } = await tx.query<ModelAliasRow>(
    `INSERT INTO organisation_model_aliases (organisation_id, alias, gateway_model_slug) VALUES ($1, $2, $3)
     ON CONFLICT (organisation_id, alias) DO UPDATE SET gateway_model_slug = EXCLUDED.gateway_model_slug, updated_at = clock_timestamp()
     RETURNING alias, gateway_model_slug, created_at, updated_at`,
    [organisationId, alias, slug],
  );
  return toModelAlias(rows[0]!);
}

/** Deletes an organisation's alias; returns what was deleted, or undefined when there was none. */
export async function deleteOrganisationModelAlias(tx: Queryable, organisationId: string, alias: string): Promise<ModelAlias | undefined> {
  const { rows } = await tx.query<ModelAliasRow>(
    `DELETE FROM organisation_model_aliases WHERE organisation_id = $1 AND alias = $2
     RETURNING alias, gateway_model_slug, created_at, updated_at`,
    [organisationId, alias],
  );
  return rows[0] ? toModelAlias(rows[0]) : undefined;
}

/**
 * Adds platform aliases from `names` to one slug, skipping every name that is already an alias or
 * a gateway model's slug (an admin's own choice is never overwritten). Returns the names added.
 */
export async function insertMissingPlatformModelAliases(tx: Queryable, names: readonly string[], slug: string): Promise<string[]> {
  const { rows } = await tx.query<{ alias: string }>(
    `INSERT INTO platform_model_aliases (alias, gateway_model_slug)
     SELECT name, $2 FROM unnest($1::text[]) AS name WHERE NOT EXISTS (SELECT 1 FROM gateway_models m WHERE m.slug = name)
     ON CONFLICT (alias) DO NOTHING
     RETURNING alias`,
    [[...names], slug],
  );
  return rows.map((row) => row.alias);
}

/** Whether any alias, the platform's or any organisation's, has this name (a new model's slug may not). */
export async function aliasNameInUse(db: Queryable, name: string): Promise<boolean> {
  const { rows } = await db.query<{ used: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM platform_model_aliases WHERE alias = $1)
         OR EXISTS (SELECT 1 FROM organisation_model_aliases WHERE alias = $1) AS used`,
    [name],
  );
  return rows[0]!.used;
}
