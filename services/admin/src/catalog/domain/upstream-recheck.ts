import type { HostResolver } from '@gateway/address-policy';
import type { Database, Queryable } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import { bumpConfigVersion } from './config-snapshot.ts';
import { allGatewayModels } from './gateway-model-store.ts';
import { upstreamDeploymentsOf } from './upstream-deployment-store.ts';
import { allowsPrivateUpstream, resolvedHostProblem, upstreamUrlProblem, type UpstreamUrlPolicy } from './upstream-url.ts';

/** One stored gateway model the current SSRF policy refuses, and why (internal detail, no credential). */
interface RefusedUpstream {
  slug: string;
  /** The stored base URL that was refused; a model whose base URL changes is judged again by the update. */
  baseUrl: string;
  reason: string;
}

/**
 * Judges every stored gateway model's base URL by the current SSRF policy, as the admin starts:
 * the URL rule (scheme, literal addresses, localhost) and, unless private upstreams are allowed,
 * what its host name resolves to now. A model stored while ADMIN_ALLOW_PRIVATE_UPSTREAMS was
 * true, or whose name has since moved to an internal address, must not be served after the
 * setting turned false, unless the model carries its own upstream.allow_private_network (then
 * it is judged with private addresses allowed). Each refusal is logged at error level with the model's slug and the
 * reason (never its credential, which is not even read here). Resolves the refusals.
 */
async function recheckStoredUpstreams(
  db: Queryable, policy: UpstreamUrlPolicy, resolve: HostResolver, logger: Logger,
): Promise<RefusedUpstream[]> {
  const models = await allGatewayModels(db);
  const judged = await Promise.all(models.map(async (model) => {
    const { baseUrl, providerKind } = model.upstream;
    // A model with its own exception is judged with private addresses allowed, as it was accepted.
    const modelPolicy = { allowPrivate: allowsPrivateUpstream(policy.allowPrivate, model.upstream.allowPrivateNetwork) };
    const reason = upstreamUrlProblem(baseUrl, modelPolicy, { providerKind }) ?? await resolvedHostProblem(baseUrl, modelPolicy, resolve);
    return reason === undefined ? undefined : { slug: model.slug, baseUrl, reason };
  }));
  const refused = judged.filter((entry) => entry !== undefined);
  for (const { slug, reason } of refused) {
    logger.error({ slug, reason }, 'gateway model not served: its upstream base URL fails the SSRF rule (ADMIN_ALLOW_PRIVATE_UPSTREAMS=false and the model has no upstream.allow_private_network); change upstream.base_url, or set upstream.allow_private_network if the private upstream is intended, to serve it again');
  }
  return refused;
}

/** One stored further deployment the current SSRF policy refuses, and why (internal detail, no credential). */
interface RefusedDeployment {
  id: string;
  slug: string;
  name: string;
  /** The stored base URL that was refused; a deployment whose base URL changes is judged again by the update. */
  baseUrl: string;
  reason: string;
}

/**
 * Judges every stored further deployment's base URL as recheckStoredUpstreams judges a model's,
 * with the deployment's own exception. Each refusal is logged at error level with the model's
 * slug, the deployment's id and name and the reason (never its credential). Resolves the refusals.
 */
async function recheckStoredDeployments(
  db: Queryable, policy: UpstreamUrlPolicy, resolve: HostResolver, logger: Logger,
): Promise<RefusedDeployment[]> {
  const deployments = await upstreamDeploymentsOf(db);
  const judged = await Promise.all(deployments.map(async (deployment) => {
    const { baseUrl, providerKind } = deployment.upstream;
    const deploymentPolicy = { allowPrivate: allowsPrivateUpstream(policy.allowPrivate, deployment.upstream.allowPrivateNetwork) };
    const reason = upstreamUrlProblem(baseUrl, deploymentPolicy, { providerKind }) ?? await resolvedHostProblem(baseUrl, deploymentPolicy, resolve);
    return reason === undefined ? undefined : { id: deployment.id, slug: deployment.gatewayModel, name: deployment.name, baseUrl, reason };
  }));
  const refused = judged.filter((entry) => entry !== undefined);
  for (const { id, slug, name, reason } of refused) {
    logger.error({ slug, deployment: name, deploymentId: id, reason }, 'upstream deployment not served: its base URL fails the SSRF rule (ADMIN_ALLOW_PRIVATE_UPSTREAMS=false and the deployment has no upstream.allow_private_network); change its upstream.base_url, or set its upstream.allow_private_network if the private upstream is intended, to serve it again');
  }
  return refused;
}

/** Where the re-check records what it refused: models by slug, further deployments by id, each with the refused base URL. */
export interface RefusedUpstreams {
  models: Map<string, string>;
  deployments: Map<string, string>;
}

/**
 * Runs the start-time re-check and makes its refusals take effect: records each refused model
 * and further deployment in `refusedUpstreams` (the maps the config snapshot source leaves them
 * out by; a refused deployment leaves its model's list, the model stays served) and, when
 * there is any, commits a new config version naming them. The new version matters because
 * snapshots are cached by version and the stream hub builds one ahead of time: anything built
 * before the refusals were known belongs to the older version and is never sent again, and
 * proxies still connected to another admin replica get a delta removing the models.
 */
export async function withholdRefusedUpstreams(
  db: Database, refusedUpstreams: RefusedUpstreams, policy: UpstreamUrlPolicy, resolve: HostResolver, logger: Logger,
): Promise<void> {
  const refused = await recheckStoredUpstreams(db, policy, resolve, logger);
  const refusedDeployments = await recheckStoredDeployments(db, policy, resolve, logger);
  if (refused.length === 0 && refusedDeployments.length === 0) return;
  for (const { slug, baseUrl } of refused) refusedUpstreams.models.set(slug, baseUrl);
  for (const { id, baseUrl } of refusedDeployments) refusedUpstreams.deployments.set(id, baseUrl);
  const slugs = new Set([...refused, ...refusedDeployments].map(({ slug }) => slug));
  await db.transaction((tx) => bumpConfigVersion(tx, [...slugs].map((slug) => ({ kind: 'gateway_model' as const, ref: slug }))));
}
