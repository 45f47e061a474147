import type { Database, Queryable } from '@gateway/db';
import type { GatewayModel, Organisation } from '../../common/domain/admin-records.ts';
import type { CredentialCipher } from '../../common/domain/credential-cipher.ts';
import { allGatewayModels, gatewayModelsBySlug, type StoredGatewayModel } from './gateway-model-store.ts';
import { platformModelAliasesNamed } from './model-alias-store.ts';
import { allowsPrivateUpstream } from './upstream-url.ts';
import {
  deploymentCredentialContext, primaryDeploymentName, upstreamDeploymentsOf, type DeploymentCosts, type StoredUpstreamDeployment,
} from './upstream-deployment-store.ts';

/** A project as proxies see it. */
export interface SnapshotProject {
  id: string;
  organisationId: string;
  disabled: boolean;
}

/** An active API key as proxies see it: its hash only. */
export interface SnapshotApiKey {
  keyHash: string;
  keyId: string;
  projectId: string;
}

/** A key revoked within retiredKeyWindowMs, as proxies see it: for the request log's 401s only, it never authenticates. */
export interface SnapshotRetiredApiKey {
  keyHash: string;
  projectId: string;
  /** When it was revoked, ms since the Unix epoch. */
  retiredAtMs: number;
}

/** How long after its revocation a key is still attributed to its project (the request log's 401), ms: 7 days. */
const retiredKeyWindowMs = 7 * 24 * 60 * 60 * 1000;

/**
 * A gateway model with its upstream credential decrypted ('' when the upstream needs none) and
 * whether the proxy may connect to it at a private address (see ConfigSnapshotOptions).
 */
export type SnapshotGatewayModel = GatewayModel & { upstreamApiKey: string; allowPrivateNetwork: boolean; deployments: SnapshotDeployment[] };

/**
 * One upstream deployment of a model as proxies see it: its credential decrypted ('' when none)
 * and whether the proxy may connect to it at a private address (as the model's own, per deployment).
 */
export interface SnapshotDeployment extends DeploymentCosts {
  /** "primary" for the model's own upstream. */
  name: string;
  upstream: { providerKind: string; baseUrl: string; model: string; apiKey: string };
  allowPrivateNetwork: boolean;
  /** 0..100, lower first. */
  priority: number;
  /** 1..1000, share within its priority. */
  weight: number;
}

/** An organisation as proxies see it: with its own model aliases, name -> gateway model slug. */
export type SnapshotOrganisation = Organisation & { modelAliases: Record<string, string> };

/** What the admin's SSRF setting and its start-time re-check make of the stored gateway models. */
export interface ConfigSnapshotOptions {
  /**
   * ADMIN_ALLOW_PRIVATE_UPSTREAMS. Each model is pushed to proxies with allow_private_network =
   * this || the model's own upstream.allowPrivateNetwork, so a proxy skips its connect-time
   * address check only while the admin allows private upstreams or for a model explicitly allowed.
   */
  allowPrivateNetwork: boolean;
  /**
   * Models the start-time re-check refused, by slug, with the base URL that was refused. Such a
   * model is left out of snapshots and deltas (a delta names it as removed) until its base URL
   * changes, since a new base URL passes the create/update check first, or until it is given its
   * own upstream.allowPrivateNetwork (the update that sets it re-judges the URL with it).
   */
  refusedUpstreams?: ReadonlyMap<string, string>;
  /**
   * Further upstream deployments the start-time re-check refused, by deployment id, with the
   * refused base URL: left out of their model's deployment list, as a refused model is left out,
   * until the base URL changes or the deployment is given its own upstream.allowPrivateNetwork.
   */
  refusedDeployments?: ReadonlyMap<string, string>;
}

/** Everything a proxy serves from, at one config version. Holds decrypted credentials: never log it. */
export interface ConfigSnapshot {
  /** The config version this snapshot is exactly the state of. */
  version: bigint;
  organisations: SnapshotOrganisation[];
  projects: SnapshotProject[];
  /** Active keys only; a revoked key is simply absent. */
  apiKeys: SnapshotApiKey[];
  /** Keys revoked within retiredKeyWindowMs (they never authenticate; the request log's 401s name their project). */
  retiredApiKeys: SnapshotRetiredApiKey[];
  gatewayModels: SnapshotGatewayModel[];
  /** Every platform-wide model alias, name -> gateway model slug. */
  platformModelAliases: Record<string, string>;
}

/**
 * What changed between two versions: the state at `version` of every entity changed since
 * `fromVersion` (upserts), and the entities that stopped existing (removals; a revoked key is
 * a removed key hash). Holds decrypted credentials: never log it.
 */
export interface ConfigDelta {
  fromVersion: bigint;
  version: bigint;
  organisations: SnapshotOrganisation[];
  projects: SnapshotProject[];
  apiKeys: SnapshotApiKey[];
  gatewayModels: SnapshotGatewayModel[];
  removedOrganisationIds: string[];
  removedProjectIds: string[];
  removedKeyHashes: string[];
  /** Keys revoked since `fromVersion` (each also in removedKeyHashes), for the request log. */
  retiredApiKeys: SnapshotRetiredApiKey[];
  removedGatewayModelSlugs: string[];
  /** Platform aliases added or retargeted since `fromVersion`, name -> slug. */
  platformModelAliases: Record<string, string>;
  /** Names of platform aliases deleted since `fromVersion`. */
  removedPlatformModelAliases: string[];
}

/** Produces full snapshots and deltas of the configuration proxies serve from. */
export interface ConfigSnapshotSource {
  /** The current snapshot, reusing the last one while the version has not moved. */
  load(): Promise<ConfigSnapshot>;
  /**
   * The changes from `fromVersion` to the current version, or 'full_needed' when the change log
   * no longer reaches back that far (pruned, or older than the log itself).
   */
  deltaSince(fromVersion: bigint): Promise<ConfigDelta | 'full_needed'>;
  /** Deletes change-log rows older than `olderThanMs` that no stream can still need; returns how many. */
  prune(olderThanMs: number): Promise<number>;
}

/** One entity whose state proxies must learn about: the unit of the change log. */
export interface ConfigChange {
  kind: 'organisation' | 'project' | 'api_key' | 'gateway_model' | 'platform_model_alias';
  /** Organisation, project or key id, gateway model slug, or platform alias name (an organisation's aliases travel with it). */
  ref: string;
}

/** The change-log entry of an organisation, project, key, model or platform alias, for bumpConfigVersion. */
export function configChange(kind: ConfigChange['kind'], ref: string): ConfigChange {
  return { kind, ref };
}

/** The AAD a gateway model's credential is sealed with, binding it to its row (a deployment's: deploymentCredentialContext). */
export function credentialContext(slug: string): string {
  return `gateway_models:${slug}`;
}

/**
 * Increments the config version inside the transaction that changes what proxies serve and
 * records which entities changed, so the change, its version and its change-log rows commit
 * together. The row lock on config_state also orders concurrent changes: versions commit in
 * order. Returns the new version.
 */
export async function bumpConfigVersion(tx: Queryable, changes: readonly ConfigChange[]): Promise<bigint> {
  const { rows } = await tx.query<{ version: bigint }>('UPDATE config_state SET version = version + 1 RETURNING version');
  const version = rows[0]!.version;
  if (changes.length > 0) {
    await tx.query(
      `INSERT INTO config_changes (version, kind, ref)
       SELECT $1, change.kind, change.ref FROM unnest($2::text[], $3::text[]) AS change (kind, ref)
       ON CONFLICT DO NOTHING`,
      [version, changes.map((change) => change.kind), changes.map((change) => change.ref)],
    );
  }
  return version;
}

/** The config version as last committed. */
export async function currentConfigVersion(db: Queryable): Promise<bigint> {
  const { rows } = await db.query<{ version: bigint }>('SELECT version FROM config_state');
  return rows[0]!.version;
}

interface OrganisationSnapshotRow {
  id: string;
  name: string;
  status: Organisation['status'];
  billing_mode: Organisation['billingMode'];
  rpm_limit: number;
  store_responses: boolean;
  response_retention_s: number | null;
  created_at: Date;
  allowed: string[];
  aliases: Array<[string, string]> | null;
}

const selectSnapshotOrganisations = `
  SELECT o.id, o.name, o.status, o.billing_mode, o.rpm_limit, o.store_responses, o.response_retention_s, o.created_at,
         ARRAY(SELECT m.gateway_model_slug FROM organisation_allowed_models m
               WHERE m.organisation_id = o.id ORDER BY m.gateway_model_slug) AS allowed,
         (SELECT json_agg(json_build_array(a.alias, a.gateway_model_slug) ORDER BY a.alias) FROM organisation_model_aliases a
               WHERE a.organisation_id = o.id) AS aliases
  FROM organisations o`;

function toOrganisation(row: OrganisationSnapshotRow): SnapshotOrganisation {
  return {
    id: row.id, name: row.name, status: row.status, billingMode: row.billing_mode,
    rpmLimit: row.rpm_limit, allowedGatewayModels: row.allowed, createdAt: row.created_at,
    modelAliases: Object.fromEntries(row.aliases ?? []),
    storeResponses: row.store_responses, responseRetentionS: row.response_retention_s,
  };
}

/**
 * Reads snapshots and deltas from the database. The version and the rows are read in one
 * repeatable-read transaction, so what is labelled V holds exactly the state committed as V.
 */
export function createConfigSnapshotSource(
  db: Database, cipher: CredentialCipher, options: ConfigSnapshotOptions = { allowPrivateNetwork: false },
): ConfigSnapshotSource {
  let cached: ConfigSnapshot | undefined;
  const refusedUpstreams = options.refusedUpstreams ?? new Map<string, string>();
  /**
   * Whether a stored model is served: explicitly allowed private, or not refused by the
   * start-time re-check with this very base URL.
   */
  const served = (model: StoredGatewayModel) => model.upstream.allowPrivateNetwork || refusedUpstreams.get(model.slug) !== model.upstream.baseUrl;
  const refusedDeployments = options.refusedDeployments ?? new Map<string, string>();
  /** Whether a further deployment is served: by the same rule as a model, per deployment. */
  const deploymentServed = (deployment: StoredUpstreamDeployment) =>
    deployment.upstream.allowPrivateNetwork || refusedDeployments.get(deployment.id) !== deployment.upstream.baseUrl;
  /** Deltas being built, by their starting version: streams at the same version share one read. */
  const deltasInFlight = new Map<bigint, Promise<ConfigDelta | 'full_needed'>>();

  /** A further deployment as proxies see it: its credential opened, its SSRF exception as the model's is computed. */
  const openDeployment = (deployment: StoredUpstreamDeployment): SnapshotDeployment => ({
    name: deployment.name,
    upstream: {
      providerKind: deployment.upstream.providerKind, baseUrl: deployment.upstream.baseUrl, model: deployment.upstream.model,
      apiKey: deployment.upstreamApiKeyEncrypted === null ? '' : cipher.decrypt(deployment.upstreamApiKeyEncrypted, deploymentCredentialContext(deployment.id)),
    },
    allowPrivateNetwork: allowsPrivateUpstream(options.allowPrivateNetwork, deployment.upstream.allowPrivateNetwork),
    priority: deployment.priority, weight: deployment.weight,
    providerInputCostMicrosPerMtok: deployment.providerInputCostMicrosPerMtok,
    providerOutputCostMicrosPerMtok: deployment.providerOutputCostMicrosPerMtok,
    providerCachedInputCostMicrosPerMtok: deployment.providerCachedInputCostMicrosPerMtok,
    providerCacheWrite5mCostMicrosPerMtok: deployment.providerCacheWrite5mCostMicrosPerMtok,
    providerCacheWrite1hCostMicrosPerMtok: deployment.providerCacheWrite1hCostMicrosPerMtok,
    providerReasoningCostMicrosPerMtok: deployment.providerReasoningCostMicrosPerMtok,
    providerAudioInputCostMicrosPerMtok: deployment.providerAudioInputCostMicrosPerMtok,
    providerImageInputCostMicrosPerMtok: deployment.providerImageInputCostMicrosPerMtok,
  });

  /**
   * A served model as proxies see it, with its complete deployment list: its own upstream first
   * as "primary" (its provider costs, priority and weight), then its served further deployments
   * by priority, then name (`extras`: the model's, in that order, as upstreamDeploymentsOf reads them).
   */
  const openModel = ({ upstreamApiKeyEncrypted, ...model }: StoredGatewayModel, extras: readonly StoredUpstreamDeployment[]): SnapshotGatewayModel => {
    const upstreamApiKey = upstreamApiKeyEncrypted === null ? '' : cipher.decrypt(upstreamApiKeyEncrypted, credentialContext(model.slug));
    const allowPrivateNetwork = allowsPrivateUpstream(options.allowPrivateNetwork, model.upstream.allowPrivateNetwork);
    const primary: SnapshotDeployment = {
      name: primaryDeploymentName,
      upstream: { providerKind: model.upstream.providerKind, baseUrl: model.upstream.baseUrl, model: model.upstream.model, apiKey: upstreamApiKey },
      allowPrivateNetwork, priority: model.upstream.priority, weight: model.upstream.weight,
      providerInputCostMicrosPerMtok: model.providerInputCostMicrosPerMtok,
      providerOutputCostMicrosPerMtok: model.providerOutputCostMicrosPerMtok,
      providerCachedInputCostMicrosPerMtok: model.providerCachedInputCostMicrosPerMtok,
      providerCacheWrite5mCostMicrosPerMtok: model.providerCacheWrite5mCostMicrosPerMtok,
      providerCacheWrite1hCostMicrosPerMtok: model.providerCacheWrite1hCostMicrosPerMtok,
      providerReasoningCostMicrosPerMtok: model.providerReasoningCostMicrosPerMtok,
      providerAudioInputCostMicrosPerMtok: model.providerAudioInputCostMicrosPerMtok,
      providerImageInputCostMicrosPerMtok: model.providerImageInputCostMicrosPerMtok,
    };
    return { ...model, upstreamApiKey, allowPrivateNetwork, deployments: [primary, ...extras.filter(deploymentServed).map(openDeployment)] };
  };

  /** The served models among `models`, opened with their deployments (read in the same transaction). */
  const openModels = async (tx: Queryable, models: readonly StoredGatewayModel[], slugs?: readonly string[]): Promise<SnapshotGatewayModel[]> => {
    const servedModels = models.filter(served);
    if (servedModels.length === 0) return [];
    const bySlug = new Map<string, StoredUpstreamDeployment[]>();
    for (const deployment of await upstreamDeploymentsOf(tx, slugs)) {
      const list = bySlug.get(deployment.gatewayModel) ?? [];
      list.push(deployment);
      bySlug.set(deployment.gatewayModel, list);
    }
    return servedModels.map((model) => openModel(model, bySlug.get(model.slug) ?? []));
  };

  async function readDelta(fromVersion: bigint): Promise<ConfigDelta | 'full_needed'> {
    return db.transaction(async (tx) => {
      const state = await tx.query<{ version: bigint; pruned_through: bigint }>('SELECT version, pruned_through FROM config_state');
      const { version, pruned_through: prunedThrough } = state.rows[0]!;
      if (fromVersion < prunedThrough || fromVersion > version) return 'full_needed';
      const delta: ConfigDelta = {
        fromVersion, version, organisations: [], projects: [], apiKeys: [], gatewayModels: [],
        removedOrganisationIds: [], removedProjectIds: [], removedKeyHashes: [], removedGatewayModelSlugs: [],
        platformModelAliases: {}, removedPlatformModelAliases: [], retiredApiKeys: [],
      };
      if (version === fromVersion) return delta;
      const changes = await tx.query<ConfigChange>(
        'SELECT DISTINCT kind, ref FROM config_changes WHERE version > $1 AND version <= $2', [fromVersion, version],
      );
      const refsOf = (kind: ConfigChange['kind']) => changes.rows.filter((change) => change.kind === kind).map((change) => change.ref);
      const organisationIds = refsOf('organisation');
      const projectIds = refsOf('project');
      const keyIds = refsOf('api_key');
      const slugs = refsOf('gateway_model');
      const aliasNames = refsOf('platform_model_alias');

      if (organisationIds.length > 0) {
        const { rows } = await tx.query<OrganisationSnapshotRow>(`${selectSnapshotOrganisations} WHERE o.id = ANY($1::text[])`, [organisationIds]);
        delta.organisations = rows.map(toOrganisation);
        const found = new Set(rows.map((row) => row.id));
        delta.removedOrganisationIds = organisationIds.filter((id) => !found.has(id));
      }
      if (projectIds.length > 0) {
        const { rows } = await tx.query<{ id: string; organisation_id: string; status: string }>(
          'SELECT id, organisation_id, status FROM projects WHERE id = ANY($1::text[])', [projectIds],
        );
        delta.projects = rows.map((row) => ({ id: row.id, organisationId: row.organisation_id, disabled: row.status !== 'active' }));
        const found = new Set(rows.map((row) => row.id));
        delta.removedProjectIds = projectIds.filter((id) => !found.has(id));
      }
      if (keyIds.length > 0) {
        const { rows } = await tx.query<{ id: string; key_hash: string; project_id: string; revoked_at: Date | null }>(
          'SELECT id, key_hash, project_id, revoked_at FROM api_keys WHERE id = ANY($1::text[])', [keyIds],
        );
        for (const row of rows) {
          if (row.revoked_at === null) delta.apiKeys.push({ keyHash: row.key_hash, keyId: row.id, projectId: row.project_id });
          else {
            delta.removedKeyHashes.push(row.key_hash);
            if (Date.now() - row.revoked_at.getTime() < retiredKeyWindowMs) {
              delta.retiredApiKeys.push({ keyHash: row.key_hash, projectId: row.project_id, retiredAtMs: row.revoked_at.getTime() });
            }
          }
        }
      }
      if (slugs.length > 0) {
        // Each changed model whole, with its deployments: a write to a deployment records its model.
        delta.gatewayModels = await openModels(tx, await gatewayModelsBySlug(tx, slugs), slugs);
        const found = new Set(delta.gatewayModels.map((model) => model.slug));
        delta.removedGatewayModelSlugs = slugs.filter((slug) => !found.has(slug));
      }
      if (aliasNames.length > 0) {
        const aliases = await platformModelAliasesNamed(tx, aliasNames);
        delta.platformModelAliases = Object.fromEntries(aliases);
        delta.removedPlatformModelAliases = aliasNames.filter((name) => !Object.hasOwn(delta.platformModelAliases, name));
      }
      return delta;
    }, { isolation: 'repeatable read' });
  }

  return {
    async load() {
      const snapshot = await db.transaction(async (tx) => {
        const version = await currentConfigVersion(tx);
        if (cached?.version === version) return cached;
        const organisations = await tx.query<OrganisationSnapshotRow>(`${selectSnapshotOrganisations} ORDER BY o.id`);
        const projects = await tx.query<{ id: string; organisation_id: string; status: string }>(
          'SELECT id, organisation_id, status FROM projects ORDER BY id',
        );
        const apiKeys = await tx.query<{ key_hash: string; id: string; project_id: string }>(
          'SELECT key_hash, id, project_id FROM api_keys WHERE revoked_at IS NULL ORDER BY id',
        );
        const retired = await tx.query<{ key_hash: string; project_id: string; revoked_at: Date }>(
          `SELECT key_hash, project_id, revoked_at FROM api_keys
           WHERE revoked_at > clock_timestamp() - make_interval(secs => $1::double precision / 1000) ORDER BY id`,
          [retiredKeyWindowMs],
        );
        const models = await allGatewayModels(tx);
        return {
          version,
          organisations: organisations.rows.map(toOrganisation),
          projects: projects.rows.map((row) => ({ id: row.id, organisationId: row.organisation_id, disabled: row.status !== 'active' })),
          apiKeys: apiKeys.rows.map((row) => ({ keyHash: row.key_hash, keyId: row.id, projectId: row.project_id })),
          retiredApiKeys: retired.rows.map((row) => ({ keyHash: row.key_hash, projectId: row.project_id, retiredAtMs: row.revoked_at.getTime() })),
          gatewayModels: await openModels(tx, models),
          platformModelAliases: Object.fromEntries(await platformModelAliasesNamed(tx)),
        } satisfies ConfigSnapshot;
      }, { isolation: 'repeatable read' });
      // Versions only grow, so a newer snapshot always replaces the cached one.
      if (!cached || snapshot.version > cached.version) cached = snapshot;
      return snapshot;
    },

    deltaSince(fromVersion) {
      let delta = deltasInFlight.get(fromVersion);
      if (!delta) {
        delta = readDelta(fromVersion).finally(() => deltasInFlight.delete(fromVersion));
        deltasInFlight.set(fromVersion, delta);
      }
      return delta;
    },

    async prune(olderThanMs) {
      return db.transaction(async (tx) => {
        const { rows } = await tx.query<{ version: bigint }>(
          `DELETE FROM config_changes WHERE recorded_at < clock_timestamp() - make_interval(secs => $1::double precision / 1000)
           RETURNING version`,
          [olderThanMs],
        );
        if (rows.length === 0) return 0;
        const highest = rows.reduce((max, row) => (row.version > max ? row.version : max), 0n);
        await tx.query('UPDATE config_state SET pruned_through = GREATEST(pruned_through, $1)', [highest]);
        return rows.length;
      });
    },
  };
}
