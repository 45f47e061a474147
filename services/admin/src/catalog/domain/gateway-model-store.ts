import type { Queryable } from '@gateway/db';
import type { Page, PageRequest } from '../../common/domain/admin-records.ts';
import { gatewayModelLeaves, leafValue, type GatewayModel, type GatewayModelLeaf, type UpdateGatewayModelInput } from './gateway-model-fields.ts';

/** A gateway model row as stored, including its sealed credential (never leaves the domain). */
export type StoredGatewayModel = GatewayModel & {
  /** `v1:<iv>:<tag>:<ciphertext>` or null when the upstream needs no credential. */
  upstreamApiKeyEncrypted: string | null;
};

/** What an insert stores: the record as created (the credential sealed; hasApiKey and createdAt are the row's). */
export type NewGatewayModel = Omit<StoredGatewayModel, 'createdAt' | 'upstream'> & {
  upstream: Omit<GatewayModel['upstream'], 'hasApiKey'>;
};

/**
 * Changes to a gateway model; absent fields stay. The credential only sealed:
 * `upstreamApiKeyEncrypted` null removes it, a string replaces it.
 */
export type GatewayModelChanges = Omit<UpdateGatewayModelInput, 'upstream'> & {
  upstream?: Omit<NonNullable<UpdateGatewayModelInput['upstream']>, 'apiKey'> | undefined;
  upstreamApiKeyEncrypted?: string | null | undefined;
};

/** The column of the sealed credential: written sealed, read as `hasApiKey` and the sealed value. */
const credentialColumn = 'upstream_api_key_encrypted';

/** The leaves stored in a column of their own, in the record's order. */
const storedLeaves = gatewayModelLeaves.filter((leaf): leaf is GatewayModelLeaf & { column: string } => leaf.column !== null);

const selectGatewayModel = `
  SELECT ${[...storedLeaves.map((leaf) => leaf.column), credentialColumn].join(', ')}
  FROM gateway_models`;

/** A row as read: one value per stored column, money as bigint, instants as Date. */
type GatewayModelRow = Record<string, unknown>;

// The one shown field without a column of its own is upstream.has_api_key, read from the sealed
// credential's column; any other would be read as a boolean by mistake, so refuse to load.
const derivedLeaves = gatewayModelLeaves.filter((leaf) => leaf.shown && leaf.column === null).map((leaf) => leaf.wireName);
if (derivedLeaves.join() !== 'upstream.has_api_key') throw new Error(`gateway model fields shown without a column: ${derivedLeaves.join(', ')}`);

function toStoredGatewayModel(row: GatewayModelRow): StoredGatewayModel {
  const model: Record<string, unknown> = {};
  for (const leaf of gatewayModelLeaves) {
    if (!leaf.shown) continue;
    const value = leaf.column === null ? row[credentialColumn] !== null : row[leaf.column];
    if (leaf.groupKey === undefined) model[leaf.key] = value;
    else ((model[leaf.groupKey] ??= {}) as Record<string, unknown>)[leaf.key] = value;
  }
  model.upstreamApiKeyEncrypted = row[credentialColumn];
  return model as StoredGatewayModel;
}

/** The public view of a stored model: the same record without the sealed credential. */
export function withoutCredential(model: StoredGatewayModel): GatewayModel {
  const { upstreamApiKeyEncrypted: _sealed, ...publicModel } = model;
  return publicModel;
}

/** Inserts a gateway model; resolves false (and changes nothing) when the slug is taken. */
export async function insertGatewayModel(tx: Queryable, model: NewGatewayModel): Promise<boolean> {
  const written = storedLeaves.filter((leaf) => leaf.creatable);
  const columns = [...written.map((leaf) => leaf.column), credentialColumn];
  const { rowCount } = await tx.query(
    `INSERT INTO gateway_models (${columns.join(', ')})
     VALUES (${columns.map((_column, index) => `$${index + 1}`).join(', ')})
     ON CONFLICT (slug) DO NOTHING`,
    [...written.map((leaf) => leafValue(model, leaf)), model.upstreamApiKeyEncrypted],
  );
  return rowCount === 1;
}

/** The gateway model with this slug, or undefined. `forUpdate` locks its row until the transaction ends. */
export async function findGatewayModel(db: Queryable, slug: string, options: { forUpdate?: boolean } = {}): Promise<StoredGatewayModel | undefined> {
  const { rows } = await db.query<GatewayModelRow>(`${selectGatewayModel} WHERE slug = $1${options.forUpdate ? ' FOR UPDATE' : ''}`, [slug]);
  return rows[0] ? toStoredGatewayModel(rows[0]) : undefined;
}

/** Every gateway model, by slug (the config snapshot needs them all). */
export async function allGatewayModels(db: Queryable): Promise<StoredGatewayModel[]> {
  const { rows } = await db.query<GatewayModelRow>(`${selectGatewayModel} ORDER BY slug`);
  return rows.map(toStoredGatewayModel);
}

/** A page of gateway models ordered by slug, after the slug `after`. */
export async function listGatewayModels(db: Queryable, page: PageRequest): Promise<Page<StoredGatewayModel>> {
  const { rows } = await db.query<GatewayModelRow>(
    `${selectGatewayModel} WHERE $1::text IS NULL OR slug > $1 ORDER BY slug LIMIT $2`,
    [page.after ?? null, page.limit + 1],
  );
  return { items: rows.slice(0, page.limit).map(toStoredGatewayModel), hasMore: rows.length > page.limit };
}

/** The slugs among `slugs` that name no gateway model, in the order given. */
export async function unknownGatewayModelSlugs(db: Queryable, slugs: readonly string[]): Promise<string[]> {
  if (slugs.length === 0) return [];
  const { rows } = await db.query<{ slug: string }>('SELECT slug FROM gateway_models WHERE slug = ANY($1::text[])', [[...slugs]]);
  const known = new Set(rows.map((row) => row.slug));
  return [...new Set(slugs)].filter((slug) => !known.has(slug));
}

/** The gateway models with these slugs (those that exist), by slug. */
export async function gatewayModelsBySlug(db: Queryable, slugs: readonly string[]): Promise<StoredGatewayModel[]> {
  const { rows } = await db.query<GatewayModelRow>(`${selectGatewayModel} WHERE slug = ANY($1::text[]) ORDER BY slug`, [[...slugs]]);
  return rows.map(toStoredGatewayModel);
}

/** Writes the changed fields of a gateway model (the CHECK constraints guard the combination). */
export async function updateGatewayModelFields(tx: Queryable, slug: string, changes: GatewayModelChanges): Promise<void> {
  const changed = storedLeaves.filter((leaf) => leaf.updatable);
  const values: unknown[] = [slug];
  const parameter = (value: unknown) => `$${values.push(value)}`;
  const assignments = changed.map((leaf) => {
    const value = leafValue(changes, leaf);
    // A nullable field may be set to null, which COALESCE cannot tell from "unchanged": a flag says which.
    if (leaf.nullable) return `${leaf.column} = CASE WHEN ${parameter(value !== undefined)}::boolean THEN ${parameter(value ?? null)}::${leaf.sqlType} ELSE ${leaf.column} END`;
    return `${leaf.column} = COALESCE(${parameter(value ?? null)}::${leaf.sqlType}, ${leaf.column})`;
  });
  // The credential may be removed (null) likewise.
  assignments.push(`${credentialColumn} = CASE WHEN ${parameter(changes.upstreamApiKeyEncrypted !== undefined)}::boolean THEN ${parameter(changes.upstreamApiKeyEncrypted ?? null)} ELSE ${credentialColumn} END`);
  await tx.query(`UPDATE gateway_models SET ${assignments.join(', ')} WHERE slug = $1`, values);
}
