import type { Queryable } from '@gateway/db';
import type { GatewayModel, Page, PageRequest } from './admin-records.ts';
import type { ProviderKind } from './provider-kinds.ts';

/** A gateway model row as stored, including its sealed credential (never leaves the domain). */
export interface StoredGatewayModel extends GatewayModel {
  /** `v1:<iv>:<tag>:<ciphertext>` or null when the upstream needs no credential. */
  upstreamApiKeyEncrypted: string | null;
}

interface GatewayModelRow {
  slug: string;
  display_name: string;
  default_max_tokens: number;
  max_context_tokens: number;
  input_price_micros_per_mtok: bigint;
  output_price_micros_per_mtok: bigint;
  provider_input_cost_micros_per_mtok: bigint;
  provider_output_cost_micros_per_mtok: bigint;
  provider_kind: ProviderKind;
  upstream_base_url: string;
  upstream_model: string;
  upstream_api_key_encrypted: string | null;
  upstream_allow_private_network: boolean;
  created_at: Date;
}

const selectGatewayModel = `
  SELECT slug, display_name, default_max_tokens, max_context_tokens,
         input_price_micros_per_mtok, output_price_micros_per_mtok,
         provider_input_cost_micros_per_mtok, provider_output_cost_micros_per_mtok,
         provider_kind, upstream_base_url, upstream_model, upstream_api_key_encrypted, upstream_allow_private_network, created_at
  FROM gateway_models`;

function toStoredGatewayModel(row: GatewayModelRow): StoredGatewayModel {
  return {
    slug: row.slug,
    displayName: row.display_name,
    defaultMaxTokens: row.default_max_tokens,
    maxContextTokens: row.max_context_tokens,
    inputPriceMicrosPerMtok: row.input_price_micros_per_mtok,
    outputPriceMicrosPerMtok: row.output_price_micros_per_mtok,
    providerInputCostMicrosPerMtok: row.provider_input_cost_micros_per_mtok,
    providerOutputCostMicrosPerMtok: row.provider_output_cost_micros_per_mtok,
    upstream: {
      providerKind: row.provider_kind,
      baseUrl: row.upstream_base_url,
      model: row.upstream_model,
      hasApiKey: row.upstream_api_key_encrypted !== null,
      allowPrivateNetwork: row.upstream_allow_private_network,
    },
    upstreamApiKeyEncrypted: row.upstream_api_key_encrypted,
    createdAt: row.created_at,
  };
}

/** The public view of a stored model: the same record without the sealed credential. */
export function withoutCredential(model: StoredGatewayModel): GatewayModel {
  const { upstreamApiKeyEncrypted: _sealed, ...publicModel } = model;
  return publicModel;
}

/** Inserts a gateway model; resolves false (and changes nothing) when the slug is taken. */
export async function insertGatewayModel(tx: Queryable, model: Omit<StoredGatewayModel, 'createdAt' | 'upstream'> & {
  upstream: Omit<GatewayModel['upstream'], 'hasApiKey'>;
}): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO gateway_models (slug, display_name, default_max_tokens, max_context_tokens,
       input_price_micros_per_mtok, output_price_micros_per_mtok,
       provider_input_cost_micros_per_mtok, provider_output_cost_micros_per_mtok,
       provider_kind, upstream_base_url, upstream_model, upstream_api_key_encrypted, upstream_allow_private_network)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT (slug) DO NOTHING`,
    [
      model.slug, model.displayName, model.defaultMaxTokens, model.maxContextTokens,
      model.inputPriceMicrosPerMtok, model.outputPriceMicrosPerMtok,
      model.providerInputCostMicrosPerMtok, model.providerOutputCostMicrosPerMtok,
      model.upstream.providerKind, model.upstream.baseUrl, model.upstream.model, model.upstreamApiKeyEncrypted,
      model.upstream.allowPrivateNetwork,
    ],
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

/** Changes to a gateway model; absent fields stay. `upstreamApiKeyEncrypted` null removes the credential. */
export interface GatewayModelChanges {
  displayName?: string | undefined;
  defaultMaxTokens?: number | undefined;
  maxContextTokens?: number | undefined;
  inputPriceMicrosPerMtok?: bigint | undefined;
  outputPriceMicrosPerMtok?: bigint | undefined;
  providerInputCostMicrosPerMtok?: bigint | undefined;
  providerOutputCostMicrosPerMtok?: bigint | undefined;
  upstreamBaseUrl?: string | undefined;
  upstreamModel?: string | undefined;
  upstreamApiKeyEncrypted?: string | null | undefined;
  upstreamAllowPrivateNetwork?: boolean | undefined;
}

/** Writes the changed fields of a gateway model (the CHECK constraints guard the combination). */
export async function updateGatewayModelFields(tx: Queryable, slug: string, changes: GatewayModelChanges): Promise<void> {
  await tx.query(
    `UPDATE gateway_models SET
       display_name = COALESCE($2, display_name),
       default_max_tokens = COALESCE($3::integer, default_max_tokens),
       max_context_tokens = COALESCE($4::integer, max_context_tokens),
       input_price_micros_per_mtok = COALESCE($5::bigint, input_price_micros_per_mtok),
       output_price_micros_per_mtok = COALESCE($6::bigint, output_price_micros_per_mtok),
       provider_input_cost_micros_per_mtok = COALESCE($7::bigint, provider_input_cost_micros_per_mtok),
       provider_output_cost_micros_per_mtok = COALESCE($8::bigint, provider_output_cost_micros_per_mtok),
       upstream_base_url = COALESCE($9, upstream_base_url),
       upstream_model = COALESCE($10, upstream_model),
       upstream_api_key_encrypted = CASE WHEN $11::boolean THEN $12 ELSE upstream_api_key_encrypted END,
       upstream_allow_private_network = COALESCE($13::boolean, upstream_allow_private_network)
     WHERE slug = $1`,
    [
      slug, changes.displayName ?? null, changes.defaultMaxTokens ?? null, changes.maxContextTokens ?? null,
      changes.inputPriceMicrosPerMtok ?? null, changes.outputPriceMicrosPerMtok ?? null,
      changes.providerInputCostMicrosPerMtok ?? null, changes.providerOutputCostMicrosPerMtok ?? null,
      changes.upstreamBaseUrl ?? null, changes.upstreamModel ?? null,
      changes.upstreamApiKeyEncrypted !== undefined, changes.upstreamApiKeyEncrypted ?? null,
      changes.upstreamAllowPrivateNetwork ?? null,
    ],
  );
}
