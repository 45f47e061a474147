import type { Queryable } from '@gateway/db';
import type { Page, PageRequest } from '../../common/domain/admin-records.ts';
import type { ProviderKind } from './provider-kinds.ts';

/** The name rule of an upstream deployment (also enforced by a CHECK constraint): a bounded metric label. */
export const deploymentNamePattern = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** The name the model's own upstream has among its deployments; no further deployment may take it. */
export const primaryDeploymentName = 'primary';

/** Most deployments a gateway model may have besides its own upstream (16 with it: metric labels stay bounded). */
export const maxExtraDeploymentsPerModel = 15;

/** The AAD a deployment's credential is sealed with, binding it to its row. */
export function deploymentCredentialContext(id: string): string {
  return `upstream_deployments:${id}`;
}

/** The provider costs of a deployment, µ₹ per million tokens (recorded, never billed); reasoning null: as output. */
export interface DeploymentCosts {
  providerInputCostMicrosPerMtok: bigint;
  providerOutputCostMicrosPerMtok: bigint;
  providerCachedInputCostMicrosPerMtok: bigint;
  providerCacheWrite5mCostMicrosPerMtok: bigint;
  providerCacheWrite1hCostMicrosPerMtok: bigint;
  providerReasoningCostMicrosPerMtok: bigint | null;
  providerAudioInputCostMicrosPerMtok: bigint;
  providerImageInputCostMicrosPerMtok: bigint;
}

/** One further upstream deployment of a gateway model, as the API shows it (no credential). */
export interface UpstreamDeployment extends DeploymentCosts {
  /** `udep_` and 24 hex characters. */
  id: string;
  /** The slug of the gateway model it serves. */
  gatewayModel: string;
  name: string;
  /** 0..100, lower first. */
  priority: number;
  /** 1..1000, share within its priority. */
  weight: number;
  upstream: { providerKind: ProviderKind; baseUrl: string; model: string; hasApiKey: boolean; allowPrivateNetwork: boolean };
  createdAt: Date;
  updatedAt: Date;
}

/** A deployment row as stored, including its sealed credential (never leaves the domain). */
export type StoredUpstreamDeployment = UpstreamDeployment & { upstreamApiKeyEncrypted: string | null };

/** What an insert stores. */
export type NewUpstreamDeployment = Omit<StoredUpstreamDeployment, 'createdAt' | 'updatedAt' | 'upstream'> & {
  upstream: Omit<UpstreamDeployment['upstream'], 'hasApiKey'>;
};

/** Changes to a deployment; absent fields stay. `upstreamApiKeyEncrypted` null removes the credential. */
export interface UpstreamDeploymentChanges extends Partial<DeploymentCosts> {
  priority?: number | undefined;
  weight?: number | undefined;
  upstream?: { baseUrl?: string | undefined; model?: string | undefined; allowPrivateNetwork?: boolean | undefined } | undefined;
  upstreamApiKeyEncrypted?: string | null | undefined;
}

/** The cost columns, domain key → column, in the record's order. */
const costColumns = [
  ['providerInputCostMicrosPerMtok', 'provider_input_cost_micros_per_mtok'],
  ['providerOutputCostMicrosPerMtok', 'provider_output_cost_micros_per_mtok'],
  ['providerCachedInputCostMicrosPerMtok', 'provider_cached_input_cost_micros_per_mtok'],
  ['providerCacheWrite5mCostMicrosPerMtok', 'provider_cache_write_5m_cost_micros_per_mtok'],
  ['providerCacheWrite1hCostMicrosPerMtok', 'provider_cache_write_1h_cost_micros_per_mtok'],
  ['providerReasoningCostMicrosPerMtok', 'provider_reasoning_cost_micros_per_mtok'],
  ['providerAudioInputCostMicrosPerMtok', 'provider_audio_input_cost_micros_per_mtok'],
  ['providerImageInputCostMicrosPerMtok', 'provider_image_input_cost_micros_per_mtok'],
] as const satisfies ReadonlyArray<readonly [keyof DeploymentCosts, string]>;

const selectDeployment = `
  SELECT id, gateway_model_slug, name, priority, weight, provider_kind, upstream_base_url, upstream_model,
         upstream_api_key_encrypted, upstream_allow_private_network, ${costColumns.map(([, column]) => column).join(', ')},
         created_at, updated_at
  FROM upstream_deployments`;

/** A row as read: money as bigint, instants as Date. */
type DeploymentRow = Record<string, unknown> & {
  id: string; gateway_model_slug: string; name: string; priority: number; weight: number; provider_kind: ProviderKind;
  upstream_base_url: string; upstream_model: string; upstream_api_key_encrypted: string | null; upstream_allow_private_network: boolean;
  created_at: Date; updated_at: Date;
};

function toStoredDeployment(row: DeploymentRow): StoredUpstreamDeployment {
  const costs = Object.fromEntries(costColumns.map(([key, column]) => [key, row[column]])) as unknown as DeploymentCosts;
  return {
    id: row.id, gatewayModel: row.gateway_model_slug, name: row.name, priority: row.priority, weight: row.weight,
    upstream: {
      providerKind: row.provider_kind, baseUrl: row.upstream_base_url, model: row.upstream_model,
      hasApiKey: row.upstream_api_key_encrypted !== null, allowPrivateNetwork: row.upstream_allow_private_network,
    },
    ...costs,
    createdAt: row.created_at, updatedAt: row.updated_at,
    upstreamApiKeyEncrypted: row.upstream_api_key_encrypted,
  };
}

/** The public view of a stored deployment: the same record without the sealed credential. */
export function deploymentWithoutCredential(deployment: StoredUpstreamDeployment): UpstreamDeployment {
  const { upstreamApiKeyEncrypted: _sealed, ...shown } = deployment;
  return shown;
}

/** Inserts a deployment; resolves false (and changes nothing) when the model already has one of that name. */
export async function insertUpstreamDeployment(tx: Queryable, deployment: NewUpstreamDeployment): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO upstream_deployments (id, gateway_model_slug, name, priority, weight, provider_kind, upstream_base_url, upstream_model,
       upstream_api_key_encrypted, upstream_allow_private_network, ${costColumns.map(([, column]) => column).join(', ')})
     VALUES (${Array.from({ length: 10 + costColumns.length }, (_value, index) => `$${index + 1}`).join(', ')})
     ON CONFLICT (gateway_model_slug, name) DO NOTHING`,
    [
      deployment.id, deployment.gatewayModel, deployment.name, deployment.priority, deployment.weight, deployment.upstream.providerKind,
      deployment.upstream.baseUrl, deployment.upstream.model, deployment.upstreamApiKeyEncrypted, deployment.upstream.allowPrivateNetwork,
      ...costColumns.map(([key]) => deployment[key]),
    ],
  );
  return rowCount === 1;
}

/** The deployment with this id, or undefined. `forUpdate` locks its row until the transaction ends. */
export async function findUpstreamDeployment(db: Queryable, id: string, options: { forUpdate?: boolean } = {}): Promise<StoredUpstreamDeployment | undefined> {
  const { rows } = await db.query<DeploymentRow>(`${selectDeployment} WHERE id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0] ? toStoredDeployment(rows[0]) : undefined;
}

/** How many further deployments a model has. */
export async function countUpstreamDeployments(db: Queryable, slug: string): Promise<number> {
  const { rows } = await db.query<{ count: number }>('SELECT count(*)::integer AS count FROM upstream_deployments WHERE gateway_model_slug = $1', [slug]);
  return rows[0]!.count;
}

/** The distinct provider kinds of a model's further deployments (what a change of the model must still fit). */
export async function deploymentProviderKinds(db: Queryable, slug: string): Promise<ProviderKind[]> {
  const { rows } = await db.query<{ provider_kind: ProviderKind }>(
    'SELECT DISTINCT provider_kind FROM upstream_deployments WHERE gateway_model_slug = $1 ORDER BY provider_kind', [slug],
  );
  return rows.map((row) => row.provider_kind);
}

/**
 * The further deployments of these models (every model's when `slugs` is undefined), each model's
 * in the order proxies try them: by priority, then name.
 */
export async function upstreamDeploymentsOf(db: Queryable, slugs?: readonly string[]): Promise<StoredUpstreamDeployment[]> {
  const { rows } = await db.query<DeploymentRow>(
    `${selectDeployment} WHERE $1::text[] IS NULL OR gateway_model_slug = ANY($1::text[]) ORDER BY gateway_model_slug, priority, name`,
    [slugs === undefined ? null : [...slugs]],
  );
  return rows.map(toStoredDeployment);
}

/**
 * A page of deployments ordered by model slug then name, after the deployment with id `after` (which must
 * exist, as other lists' cursors: a deleted one ends the list);
 * only one model's when `gatewayModel` is given.
 */
export async function listUpstreamDeployments(
  db: Queryable, filter: { gatewayModel?: string | undefined }, page: PageRequest,
): Promise<Page<StoredUpstreamDeployment>> {
  const { rows } = await db.query<DeploymentRow>(
    `${selectDeployment}
     WHERE ($1::text IS NULL OR gateway_model_slug = $1)
       AND ($2::text IS NULL OR (gateway_model_slug, name) > (SELECT a.gateway_model_slug, a.name FROM upstream_deployments a WHERE a.id = $2))
     ORDER BY gateway_model_slug, name LIMIT $3`,
    [filter.gatewayModel ?? null, page.after ?? null, page.limit + 1],
  );
  return { items: rows.slice(0, page.limit).map(toStoredDeployment), hasMore: rows.length > page.limit };
}

/** Writes the changed fields of a deployment and its updated_at. */
export async function updateUpstreamDeploymentFields(tx: Queryable, id: string, changes: UpstreamDeploymentChanges): Promise<void> {
  const values: unknown[] = [id];
  const parameter = (value: unknown) => `$${values.push(value)}`;
  const plain = (column: string, value: unknown, sqlType: string) => `${column} = COALESCE(${parameter(value ?? null)}::${sqlType}, ${column})`;
  // A nullable value may be set to null, which COALESCE cannot tell from "unchanged": a flag says which.
  const nullable = (column: string, value: unknown, sqlType: string) =>
    `${column} = CASE WHEN ${parameter(value !== undefined)}::boolean THEN ${parameter(value ?? null)}::${sqlType} ELSE ${column} END`;
  const assignments = [
    plain('priority', changes.priority, 'integer'),
    plain('weight', changes.weight, 'integer'),
    plain('upstream_base_url', changes.upstream?.baseUrl, 'text'),
    plain('upstream_model', changes.upstream?.model, 'text'),
    plain('upstream_allow_private_network', changes.upstream?.allowPrivateNetwork, 'boolean'),
    nullable('upstream_api_key_encrypted', changes.upstreamApiKeyEncrypted, 'text'),
    ...costColumns.map(([key, column]) => (key === 'providerReasoningCostMicrosPerMtok'
      ? nullable(column, changes[key], 'bigint') : plain(column, changes[key], 'bigint'))),
    'updated_at = clock_timestamp()',
  ];
  await tx.query(`UPDATE upstream_deployments SET ${assignments.join(', ')} WHERE id = $1`, values);
}

/** Deletes a deployment. */
export async function deleteUpstreamDeployment(tx: Queryable, id: string): Promise<void> {
  await tx.query('DELETE FROM upstream_deployments WHERE id = $1', [id]);
}
