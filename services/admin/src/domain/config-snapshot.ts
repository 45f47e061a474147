import type { Database, Queryable } from '@gateway/db';
import type { GatewayModel, Organisation } from './admin-records.ts';
import type { CredentialCipher } from './credential-cipher.ts';
import { allGatewayModels } from './gateway-model-store.ts';

/** Everything a proxy serves from, at one config version. Holds decrypted credentials: never log it. */
export interface ConfigSnapshot {
  /** The config version this snapshot is exactly the state of. */
  version: bigint;
  organisations: Organisation[];
  projects: Array<{ id: string; organisationId: string; disabled: boolean }>;
  /** Active keys only; a revoked key is simply absent. */
  apiKeys: Array<{ keyHash: string; keyId: string; projectId: string }>;
  /** Gateway models with the upstream credential decrypted ('' when the upstream needs none). */
  gatewayModels: Array<GatewayModel & { upstreamApiKey: string }>;
}

/** Produces the current snapshot, reusing the last one while the version has not moved. */
export interface ConfigSnapshotSource {
  load(): Promise<ConfigSnapshot>;
}

/** The AAD a gateway model's credential is sealed with, binding it to its row. */
export function credentialContext(slug: string): string {
  return `gateway_models:${slug}`;
}

/**
 * Increments the config version inside the transaction that changes what proxies serve, so the
 * change and its version commit together. Returns the new version.
 */
export async function bumpConfigVersion(tx: Queryable): Promise<bigint> {
  const { rows } = await tx.query<{ version: bigint }>('UPDATE config_state SET version = version + 1 RETURNING version');
  return rows[0]!.version;
}

/** The config version as last committed. */
export async function currentConfigVersion(db: Queryable): Promise<bigint> {
  const { rows } = await db.query<{ version: bigint }>('SELECT version FROM config_state');
  return rows[0]!.version;
}

/**
 * Reads snapshots from the database. The version and the rows are read in one repeatable-read
 * transaction, so a snapshot labelled V holds exactly the state committed as V.
 */
export function createConfigSnapshotSource(db: Database, cipher: CredentialCipher): ConfigSnapshotSource {
  let cached: ConfigSnapshot | undefined;

  return {
    async load() {
      const snapshot = await db.transaction(async (tx) => {
        const version = await currentConfigVersion(tx);
        if (cached?.version === version) return cached;
        const organisations = await tx.query<{
          id: string; name: string; status: Organisation['status']; billing_mode: Organisation['billingMode'];
          rpm_limit: number; created_at: Date; allowed: string[];
        }>(`SELECT o.id, o.name, o.status, o.billing_mode, o.rpm_limit, o.created_at,
                   ARRAY(SELECT m.gateway_model_slug FROM organisation_allowed_models m
                         WHERE m.organisation_id = o.id ORDER BY m.gateway_model_slug) AS allowed
            FROM organisations o ORDER BY o.id`);
        const projects = await tx.query<{ id: string; organisation_id: string; status: string }>(
          'SELECT id, organisation_id, status FROM projects ORDER BY id',
        );
        const apiKeys = await tx.query<{ key_hash: string; id: string; project_id: string }>(
          'SELECT key_hash, id, project_id FROM api_keys WHERE revoked_at IS NULL ORDER BY id',
        );
        const models = await allGatewayModels(tx);
        return {
          version,
          organisations: organisations.rows.map((row) => ({
            id: row.id, name: row.name, status: row.status, billingMode: row.billing_mode,
            rpmLimit: row.rpm_limit, allowedGatewayModels: row.allowed, createdAt: row.created_at,
          })),
          projects: projects.rows.map((row) => ({ id: row.id, organisationId: row.organisation_id, disabled: row.status !== 'active' })),
          apiKeys: apiKeys.rows.map((row) => ({ keyHash: row.key_hash, keyId: row.id, projectId: row.project_id })),
          gatewayModels: models.map(({ upstreamApiKeyEncrypted, ...model }) => ({
            ...model,
            upstreamApiKey: upstreamApiKeyEncrypted === null ? '' : cipher.decrypt(upstreamApiKeyEncrypted, credentialContext(model.slug)),
          })),
        } satisfies ConfigSnapshot;
      }, { isolation: 'repeatable read' });
      // Versions only grow, so a newer snapshot always replaces the cached one.
      if (!cached || snapshot.version > cached.version) cached = snapshot;
      return snapshot;
    },
  };
}
