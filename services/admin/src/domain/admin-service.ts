import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { randomUUID } from 'node:crypto';
import { issueSecret } from '@gateway/secrets';
import { canSeeOrganisation, requirePlatformAdmin, systemActor, type Actor } from './actor.ts';
import type {
  Balance, BillingMode, GatewayModel, Organisation, OrganisationStatus, Page, PageRequest, Project, ProjectSpend, ProjectStatus,
  Propagation, UsageRecord, UsageSummaryRow,
} from './admin-records.ts';
import {
  findAdminToken, issueAdminToken, listAdminTokens, revokeAdminToken, type AdminTokenInfo,
} from './admin-tokens.ts';
import { changedFields, listAuditEvents, recordAuditEvent, type AuditEvent, type AuditChanges } from './audit-log.ts';
import type { ConfigPublisher } from './config-publisher.ts';
import { bumpConfigVersion, credentialContext, type ConfigChange } from './config-snapshot.ts';
import type { CredentialCipher } from './credential-cipher.ts';
import {
  findGatewayModel, insertGatewayModel, listGatewayModels, unknownGatewayModelSlugs, updateGatewayModelFields, withoutCredential,
  type GatewayModelChanges, type StoredGatewayModel,
} from './gateway-model-store.ts';
import { isId, newId } from './ids.ts';
import type { LedgerPort } from './ledger-port.ts';
import {
  findOrganisation, insertOrganisation, listOrganisations, organisationExists, replaceAllowedModels, updateOrganisationFields,
} from './organisation-store.ts';
import { findProject, insertApiKey, insertProject, listProjects, revokeActiveKeys, updateProjectFields } from './project-store.ts';
import { apiVersionQueryProviderKind, type ProviderKind } from './provider-kinds.ts';
import { systemResolver, type HostResolver } from '@gateway/address-policy';
import {
  allowsPrivateUpstream, normaliseUpstreamUrl, resolvedHostProblem, resolvesToInternalAddressProblem, upstreamUrlProblem,
} from './upstream-url.ts';

/** The field a refused upstream URL is blamed on: the URL given, or the exception turned off. */
type UpstreamRuleParam = 'upstream.base_url' | 'upstream.allow_private_network';

/** What the admin service is built from. */
export interface AdminServiceDeps {
  db: Database;
  ledger: LedgerPort;
  cipher: CredentialCipher;
  publisher: ConfigPublisher;
  /** true: upstream base URLs may be http and private addresses (development, demo). */
  allowPrivateUpstreams: boolean;
  /** Resolves upstream host names for the SSRF check; default the system resolver (tests inject a table). */
  resolveHost?: HostResolver;
}

/** A new organisation as a platform admin describes it. */
export interface CreateOrganisationInput {
  name: string;
  billingMode: BillingMode;
  rpmLimit: number;
  allowedGatewayModels: string[];
}

/** Changes to an organisation; absent fields stay as they are. */
export interface UpdateOrganisationInput {
  name?: string | undefined;
  status?: OrganisationStatus | undefined;
  billingMode?: BillingMode | undefined;
  rpmLimit?: number | undefined;
  allowedGatewayModels?: string[] | undefined;
}

/** A manual credit: the caller's idempotency key, a positive amount in µ₹ and why. */
export interface CreditInput {
  idempotencyKey: string;
  amountMicros: bigint;
  reason: string;
}

/** The result of a manual credit; a replay returns the first call's result with `replayed` set. */
export interface CreditOutcome {
  creditId: string;
  organisationId: string;
  amountMicros: bigint;
  reason: string;
  /** The balance right after the credit was applied (the same on a replay). */
  balance: Balance;
  replayed: boolean;
}

/** A new gateway model. Prices and costs in µ₹ per million tokens. */
export interface CreateGatewayModelInput {
  slug: string;
  displayName?: string | undefined;
  defaultMaxTokens: number;
  maxContextTokens: number;
  inputPriceMicrosPerMtok: bigint;
  outputPriceMicrosPerMtok: bigint;
  providerInputCostMicrosPerMtok: bigint;
  providerOutputCostMicrosPerMtok: bigint;
  /**
   * `allowPrivateNetwork` true is the model's explicit SSRF exception: its base URL may use http
   * and a private or loopback address, and proxies skip their connect-time check for it. Default false.
   */
  upstream: { providerKind: ProviderKind; baseUrl: string; model: string; apiKey?: string | undefined; allowPrivateNetwork?: boolean | undefined };
}

/** Changes to a gateway model; absent fields stay. Prices in µ₹ per million tokens. */
export interface UpdateGatewayModelInput {
  displayName?: string | undefined;
  defaultMaxTokens?: number | undefined;
  maxContextTokens?: number | undefined;
  inputPriceMicrosPerMtok?: bigint | undefined;
  outputPriceMicrosPerMtok?: bigint | undefined;
  providerInputCostMicrosPerMtok?: bigint | undefined;
  providerOutputCostMicrosPerMtok?: bigint | undefined;
  /**
   * `apiKey` null removes the credential; a string replaces it; absent keeps it. `allowPrivateNetwork`
   * sets or clears the model's SSRF exception; turning it off is refused while the base URL needs it.
   */
  upstream?: {
    baseUrl?: string | undefined; model?: string | undefined; apiKey?: string | null | undefined; allowPrivateNetwork?: boolean | undefined;
  } | undefined;
}

/** A project's monthly budget: cap in µ₹, soft alert at a percentage (1..100) of it. */
export interface ProjectBudgetInput {
  monthlyCapMicros: bigint;
  softAlertPercent: number;
}

/** Filters and paging of a usage listing. */
export interface UsageQuery {
  projectId?: string | undefined;
  modelSlug?: string | undefined;
  /** 1..500 records. */
  limit: number;
  cursor?: string | undefined;
}

/** The settings of the built-in demo model, seeded when DEMO_UPSTREAM_URL is set. */
export const demoGatewayModel = {
  slug: 'demo',
  displayName: 'Demo (built-in demo upstream, no provider account)',
  defaultMaxTokens: 256,
  maxContextTokens: 8192,
  inputPriceMicrosPerMtok: 1_000_000n, // ₹1 per million input tokens
  outputPriceMicrosPerMtok: 2_000_000n, // ₹2 per million output tokens
  providerInputCostMicrosPerMtok: 0n,
  providerOutputCostMicrosPerMtok: 0n,
  upstreamModel: 'demo',
} as const;

/** The JSON stored with a completed manual credit; money as decimal strings. */
interface StoredCreditResponse {
  creditId: string;
  organisationId: string;
  amountMicros: string;
  reason: string;
  balance: { creditedMicros: string; availableMicros: string; heldMicros: string; debitedMicros: string };
}

/** The slug rule of a gateway model (also enforced by the API schema and a CHECK constraint). */
export const gatewayModelSlugPattern = /^[a-z0-9][a-z0-9._:/-]{0,127}$/;

/** Only a value shaped like one of our ids is echoed back: anything else might be a pasted secret. */
const echoableIdPattern = /^[a-z]{1,8}_[0-9a-f]{24}$/;

/** The not_found answer for an id an actor may not see or that does not exist (the two look the same). */
function notFound(what: string, id: string, param: string): GatewayError {
  const publicMessage = echoableIdPattern.test(id) ? `No ${what} has the id "${id}".` : `No ${what} has this id.`;
  return new GatewayError('not_found', { publicMessage, param });
}

/** The admin's business operations, with no transport in them. */
export type AdminService = ReturnType<typeof createAdminService>;

/** The change-log entries of an organisation, project, key or model, for bumpConfigVersion. */
const change = (kind: ConfigChange['kind'], ref: string): ConfigChange => ({ kind, ref });

/** How a stored credential appears in the audit log: whether it is set, never what it is. */
function credentialMarker(sealed: string | null): string | null {
  return sealed === null ? null : '(set)';
}

/**
 * Creates the admin's business operations over its database, the ledger and the config stream.
 * Every operation takes the Actor making it: an organisation token sees only its organisation
 * (anything else answers not_found, exactly as if it did not exist) and may not do what is a
 * platform admin's alone (permission_denied); every mutation is written to the audit log in the
 * transaction that makes it.
 */
export function createAdminService(deps: AdminServiceDeps) {
  const { db, ledger, cipher, publisher } = deps;

  /** The organisation, if the actor may see it; not_found otherwise (unknown and foreign look the same). */
  async function requireOrganisation(actor: Actor, id: string, tx: Queryable = db, options: { forUpdate?: boolean } = {}): Promise<Organisation> {
    const organisation = isId('organisation', id) && canSeeOrganisation(actor, id) ? await findOrganisation(tx, id, options) : undefined;
    if (!organisation) throw notFound('organisation', id, 'id');
    return organisation;
  }

  /** The project, if the actor may see its organisation; not_found otherwise. */
  async function requireProject(actor: Actor, id: string, tx: Queryable = db, options: { forUpdate?: boolean } = {}): Promise<Project> {
    const project = isId('project', id) ? await findProject(tx, id, options) : undefined;
    if (!project || !canSeeOrganisation(actor, project.organisationId)) throw notFound('project', id, 'id');
    return project;
  }

  async function requireKnownSlugs(slugs: readonly string[]): Promise<void> {
    const unknown = await unknownGatewayModelSlugs(db, slugs);
    if (unknown.length > 0) {
      throw new GatewayError('invalid_request', {
        publicMessage: `Invalid request: allowed_gateway_models: no gateway model has the slug ${unknown.map((s) => `"${s}"`).join(', ')}.`,
        param: 'allowed_gateway_models',
      });
    }
  }

  function gatewayModelNotFound(slug: string): GatewayError {
    const publicMessage = gatewayModelSlugPattern.test(slug) ? `No gateway model has the slug "${slug}".` : 'No gateway model has this slug.';
    return new GatewayError('not_found', { publicMessage, param: 'slug' });
  }

  function toBalanceJson(balance: Balance): StoredCreditResponse['balance'] {
    return {
      creditedMicros: balance.creditedMicros.toString(),
      availableMicros: balance.availableMicros.toString(),
      heldMicros: balance.heldMicros.toString(),
      debitedMicros: balance.debitedMicros.toString(),
    };
  }

  function fromStoredCredit(stored: StoredCreditResponse, replayed: boolean): CreditOutcome {
    return {
      creditId: stored.creditId,
      organisationId: stored.organisationId,
      amountMicros: BigInt(stored.amountMicros),
      reason: stored.reason,
      balance: {
        organisationId: stored.organisationId,
        creditedMicros: BigInt(stored.balance.creditedMicros),
        availableMicros: BigInt(stored.balance.availableMicros),
        heldMicros: BigInt(stored.balance.heldMicros),
        debitedMicros: BigInt(stored.balance.debitedMicros),
      },
      replayed,
    };
  }

  const organisationAuditFields = {
    name: 'name', status: 'status', billingMode: 'billing_mode', rpmLimit: 'rpm_limit', allowedGatewayModels: 'allowed_gateway_models',
  };
  const gatewayModelAuditFields = {
    displayName: 'display_name', defaultMaxTokens: 'default_max_tokens', maxContextTokens: 'max_context_tokens',
    inputPriceMicrosPerMtok: 'input_price_micros_per_mtok', outputPriceMicrosPerMtok: 'output_price_micros_per_mtok',
    providerInputCostMicrosPerMtok: 'provider_input_cost_micros_per_mtok', providerOutputCostMicrosPerMtok: 'provider_output_cost_micros_per_mtok',
    providerKind: 'upstream.provider_kind', baseUrl: 'upstream.base_url', upstreamModel: 'upstream.model', credential: 'upstream.api_key',
    allowPrivateNetwork: 'upstream.allow_private_network',
  };
  /** The SSRF policy for a model with (or without) its own exception: ADMIN_ALLOW_PRIVATE_UPSTREAMS || its flag. */
  const upstreamPolicy = (modelAllowsPrivateNetwork: boolean) => ({ allowPrivate: allowsPrivateUpstream(deps.allowPrivateUpstreams, modelAllowsPrivateNetwork) });
  /**
   * The 400 for a base URL the SSRF rule refuses. `param` is upstream.base_url when the request
   * gave the URL, or upstream.allow_private_network when it only turned the exception off and the
   * stored URL needs it.
   */
  const refusedUpstream = (param: UpstreamRuleParam, problem: string, internalMessage?: string) => new GatewayError('invalid_request', {
    publicMessage: param === 'upstream.base_url'
      ? `Invalid request: upstream.base_url: ${problem}.`
      : `Invalid request: upstream.allow_private_network: cannot be false while the model's upstream.base_url needs it (upstream.base_url ${problem}); give a public https upstream.base_url in the same request.`,
    param,
    ...(internalMessage === undefined ? {} : { internalMessage }),
  });
  /** Refuses a base URL the SSRF rule forbids for this provider kind and exception (400). */
  const requireUpstreamUrl = (baseUrl: string, providerKind: ProviderKind, allowPrivateNetwork: boolean, param: UpstreamRuleParam = 'upstream.base_url') => {
    const problem = upstreamUrlProblem(baseUrl, upstreamPolicy(allowPrivateNetwork), { providerKind });
    if (problem) throw refusedUpstream(param, problem);
  };
  /**
   * Refuses a base URL whose host name resolves to an address the SSRF policy refuses (400; the
   * address stays in the internal message). DNS can change after this: the proxy checks again
   * at connect time, which is the real guard.
   */
  const requireResolvedUpstream = async (baseUrl: string, allowPrivateNetwork: boolean, param: UpstreamRuleParam = 'upstream.base_url') => {
    const problem = await resolvedHostProblem(baseUrl, upstreamPolicy(allowPrivateNetwork), deps.resolveHost ?? systemResolver);
    if (problem) throw refusedUpstream(param, resolvesToInternalAddressProblem, problem);
  };
  /** A gateway model flattened for the audit log; the credential only as a marker. */
  const gatewayModelAuditRecord = (model: GatewayModel & { upstreamApiKeyEncrypted: string | null }) => ({
    ...model, providerKind: model.upstream.providerKind, baseUrl: model.upstream.baseUrl, upstreamModel: model.upstream.model,
    credential: credentialMarker(model.upstreamApiKeyEncrypted), allowPrivateNetwork: model.upstream.allowPrivateNetwork,
  });
  const apiKeyAuditValue = (project: Project) => (project.apiKey === null ? null : { id: project.apiKey.id, hint: project.apiKey.hint });
  const tokenAuditFields = { name: 'name', organisationId: 'organisation_id', hint: 'hint', revokedAt: 'revoked_at' };

  return {
    /**
     * Creates an organisation: its ledger account is opened first (idempotent on the new id),
     * so a ledger failure leaves nothing behind in the admin.
     */
    async createOrganisation(actor: Actor, input: CreateOrganisationInput): Promise<{ organisation: Organisation; propagation: Propagation }> {
      requirePlatformAdmin(actor);
      await requireKnownSlugs(input.allowedGatewayModels);
      const id = newId('organisation');
      await ledger.openAccount(id);
      const { version, organisation } = await db.transaction(async (tx) => {
        await insertOrganisation(tx, { id, status: 'active', ...input });
        const created = (await findOrganisation(tx, id))!;
        await recordAuditEvent(tx, {
          actor, organisationId: id, action: 'organisation.create', resourceType: 'organisation', resourceId: id,
          changes: changedFields(undefined, created, organisationAuditFields),
        });
        return { version: await bumpConfigVersion(tx, [change('organisation', id)]), organisation: created };
      });
      const propagation = await publisher.publish(version);
      return { organisation, propagation };
    },

    /** A page of organisations in creation order (an organisation token sees only its own). */
    async listOrganisations(actor: Actor, page: PageRequest): Promise<Page<Organisation>> {
      const badAfter = () => new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no organisation has this id.', param: 'after' });
      if (actor.kind === 'organisation_token') {
        if (page.after !== undefined && page.after !== actor.organisationId) throw badAfter();
        const own = page.after === undefined ? await findOrganisation(db, actor.organisationId) : undefined;
        return { items: own ? [own] : [], hasMore: false };
      }
      if (page.after !== undefined && !(isId('organisation', page.after) && await organisationExists(db, page.after))) throw badAfter();
      return listOrganisations(db, page);
    },

    /** The organisation with this id (not_found otherwise). */
    getOrganisation: (actor: Actor, id: string) => requireOrganisation(actor, id),

    /** Changes an organisation and pushes the new configuration (a suspension is a hard cutover). */
    async updateOrganisation(actor: Actor, id: string, input: UpdateOrganisationInput): Promise<{ organisation: Organisation; propagation: Propagation }> {
      await requireOrganisation(actor, id);
      requirePlatformAdmin(actor);
      if (input.allowedGatewayModels !== undefined) await requireKnownSlugs(input.allowedGatewayModels);
      const { version, organisation } = await db.transaction(async (tx) => {
        const current = await requireOrganisation(actor, id, tx, { forUpdate: true });
        await updateOrganisationFields(tx, id, input);
        if (input.allowedGatewayModels !== undefined) await replaceAllowedModels(tx, id, input.allowedGatewayModels);
        const updated = (await findOrganisation(tx, id))!;
        const changes = changedFields(current, updated, organisationAuditFields);
        await recordAuditEvent(tx, { actor, organisationId: id, action: 'organisation.update', resourceType: 'organisation', resourceId: id, changes });
        // A rename alone changes nothing proxies serve: no new version to wait for.
        const servedChanged = Object.keys(changes).some((field) => field !== 'name');
        return { version: servedChanged ? await bumpConfigVersion(tx, [change('organisation', id)]) : undefined, organisation: updated };
      });
      const propagation = version === undefined ? { acknowledged: true, pendingProxyIds: [] } : await publisher.publish(version);
      return { organisation, propagation };
    },

    /**
     * Credits an organisation's balance through the ledger, idempotently per Idempotency-Key:
     * the same key and body return the first result; the same key with another body is refused.
     */
    async creditOrganisation(actor: Actor, organisationId: string, input: CreditInput): Promise<CreditOutcome> {
      await requireOrganisation(actor, organisationId);
      requirePlatformAdmin(actor);
      const creditId = `manual:${organisationId}:${input.idempotencyKey}`;
      const conflict = () => new GatewayError('idempotency_conflict', {
        publicMessage: 'This Idempotency-Key was already used for a credit with a different amount_micros or reason.',
        param: 'Idempotency-Key',
      });
      await db.query(
        `INSERT INTO manual_credits (credit_id, organisation_id, idempotency_key, amount_micros, reason)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (credit_id) DO NOTHING`,
        [creditId, organisationId, input.idempotencyKey, input.amountMicros, input.reason],
      );
      const { rows } = await db.query<{ amount_micros: bigint; reason: string; response: StoredCreditResponse | null }>(
        'SELECT amount_micros, reason, response FROM manual_credits WHERE credit_id = $1', [creditId],
      );
      const recorded = rows[0]!;
      if (recorded.amount_micros !== input.amountMicros || recorded.reason !== input.reason) throw conflict();
      if (recorded.response !== null) return fromStoredCredit(recorded.response, true);

      // Not completed yet (new, or an earlier attempt failed part-way): the ledger credit is
      // idempotent on creditId, so calling it again is safe.
      await ledger.credit({ creditId, organisationId, amountMicros: input.amountMicros, reason: input.reason });
      const balance = await ledger.getBalance(organisationId);
      const response: StoredCreditResponse = {
        creditId, organisationId, amountMicros: input.amountMicros.toString(), reason: input.reason, balance: toBalanceJson(balance),
      };
      const completed = await db.transaction(async (tx) => {
        const updated = await tx.query<{ response: StoredCreditResponse }>(
          `UPDATE manual_credits SET response = $2, completed_at = clock_timestamp()
           WHERE credit_id = $1 AND response IS NULL RETURNING response`,
          [creditId, JSON.stringify(response)],
        );
        if (updated.rows.length === 1) {
          await recordAuditEvent(tx, {
            actor, organisationId, action: 'organisation.credit', resourceType: 'credit', resourceId: creditId,
            changes: {
              amount_micros: { before: null, after: input.amountMicros.toString() },
              reason: { before: null, after: input.reason },
            },
          });
        }
        return updated.rows.length === 1;
      });
      if (completed) return fromStoredCredit(response, false);
      // A concurrent call with the same key completed first: answer with its result.
      const winner = await db.query<{ response: StoredCreditResponse }>('SELECT response FROM manual_credits WHERE credit_id = $1', [creditId]);
      return fromStoredCredit(winner.rows[0]!.response, true);
    },

    /** An organisation's balance as the ledger holds it. */
    async getBalance(actor: Actor, organisationId: string): Promise<Balance> {
      await requireOrganisation(actor, organisationId);
      return ledger.getBalance(organisationId);
    },

    /** A page of an organisation's usage records, newest first. */
    async listUsage(actor: Actor, organisationId: string, query: UsageQuery): Promise<{ records: UsageRecord[]; nextCursor: string | null }> {
      await requireOrganisation(actor, organisationId);
      if (query.projectId !== undefined) await requireProjectOf(actor, organisationId, query.projectId);
      const page = await ledger.listUsage({
        organisationId, projectId: query.projectId, modelSlug: query.modelSlug, pageSize: query.limit, pageToken: query.cursor,
      });
      return { records: page.records, nextCursor: page.nextPageToken };
    },

    /** An organisation's usage summed by day (Asia/Kolkata) and model, optionally for one project and a window (ms). */
    async summarizeUsage(actor: Actor, organisationId: string, query: { projectId?: string | undefined; fromMs?: number | undefined; toMs?: number | undefined }): Promise<UsageSummaryRow[]> {
      await requireOrganisation(actor, organisationId);
      if (query.projectId !== undefined) await requireProjectOf(actor, organisationId, query.projectId);
      return ledger.summarizeUsage({ organisationId, ...query });
    },

    /**
     * Creates a project and its API key. Returns the secret (shown once; only its hash is
     * stored) after connected proxies acknowledged the version holding the key.
     */
    async createProject(actor: Actor, organisationId: string, input: { name: string }): Promise<{ project: Project; apiKey: string; propagation: Propagation }> {
      await requireOrganisation(actor, organisationId);
      const projectId = newId('project');
      const keyId = newId('apiKey');
      const issued = issueSecret('apiKey');
      const { version, project } = await db.transaction(async (tx) => {
        await insertProject(tx, { id: projectId, organisationId, name: input.name });
        await insertApiKey(tx, { id: keyId, projectId, keyHash: issued.hash, hint: issued.hint });
        const created = (await findProject(tx, projectId))!;
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'project.create', resourceType: 'project', resourceId: projectId,
          changes: { ...changedFields(undefined, created, { name: 'name', status: 'status' }), api_key: { before: null, after: apiKeyAuditValue(created) } },
        });
        return { version: await bumpConfigVersion(tx, [change('project', projectId), change('api_key', keyId)]), project: created };
      });
      const propagation = await publisher.publish(version);
      return { project, apiKey: issued.secret, propagation };
    },

    /** A page of an organisation's projects in creation order. */
    async listProjects(actor: Actor, organisationId: string, page: PageRequest): Promise<Page<Project>> {
      await requireOrganisation(actor, organisationId);
      if (page.after !== undefined) {
        const after = isId('project', page.after) ? await findProject(db, page.after) : undefined;
        if (!after || after.organisationId !== organisationId) {
          throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no project of this organisation has this id.', param: 'after' });
        }
      }
      return listProjects(db, organisationId, page);
    },

    /** The project with this id (not_found otherwise). */
    getProject: (actor: Actor, id: string) => requireProject(actor, id),

    /**
     * Renames, disables or re-enables a project. Disabling is a hard cutover like a
     * suspension: the call returns once connected proxies refuse the project's key.
     */
    async updateProject(actor: Actor, id: string, input: { name?: string | undefined; status?: ProjectStatus | undefined }): Promise<{ project: Project; propagation: Propagation }> {
      const { version, project } = await db.transaction(async (tx) => {
        const current = await requireProject(actor, id, tx, { forUpdate: true });
        await updateProjectFields(tx, id, input);
        const updated = (await findProject(tx, id))!;
        const changes = changedFields(current, updated, { name: 'name', status: 'status' });
        await recordAuditEvent(tx, { actor, organisationId: updated.organisationId, action: 'project.update', resourceType: 'project', resourceId: id, changes });
        return { version: changes.status ? await bumpConfigVersion(tx, [change('project', id)]) : undefined, project: updated };
      });
      const propagation = version === undefined ? { acknowledged: true, pendingProxyIds: [] } : await publisher.publish(version);
      return { project, propagation };
    },

    /**
     * Rotates a project's API key, a hard cutover: the old key is revoked and a new one issued
     * in one transaction, and the new secret is returned only after every connected proxy has
     * acknowledged the version without the old key (or after the ack timeout, marked pending).
     */
    async rotateProjectKey(actor: Actor, id: string): Promise<{ project: Project; apiKey: string; propagation: Propagation }> {
      const issued = issueSecret('apiKey');
      const keyId = newId('apiKey');
      const { version, project } = await db.transaction(async (tx) => {
        const current = await requireProject(actor, id, tx, { forUpdate: true });
        const revokedKeyIds = await revokeActiveKeys(tx, id);
        await insertApiKey(tx, { id: keyId, projectId: id, keyHash: issued.hash, hint: issued.hint });
        const updated = (await findProject(tx, id))!;
        await recordAuditEvent(tx, {
          actor, organisationId: updated.organisationId, action: 'project.rotate_key', resourceType: 'project', resourceId: id,
          changes: { api_key: { before: apiKeyAuditValue(current), after: apiKeyAuditValue(updated) } },
        });
        const keyChanges = [...revokedKeyIds, keyId].map((ref) => change('api_key', ref));
        return { version: await bumpConfigVersion(tx, keyChanges), project: updated };
      });
      const propagation = await publisher.publish(version);
      return { project, apiKey: issued.secret, propagation };
    },

    /** A project's budget and spend this month, from the ledger. */
    async getProjectBudget(actor: Actor, id: string): Promise<ProjectSpend> {
      await requireProject(actor, id);
      return ledger.getProjectSpend(id);
    },

    /** Sets (budget) or clears (null) a project's monthly budget in the ledger; resolves the budget and spend after. */
    async setProjectBudget(actor: Actor, id: string, budget: ProjectBudgetInput | null): Promise<ProjectSpend> {
      const project = await requireProject(actor, id);
      const before = await ledger.getProjectSpend(id);
      await ledger.setProjectBudget({
        requestId: `admin-budget:${id}:${randomUUID()}`,
        organisationId: project.organisationId,
        projectId: id,
        monthlyCapMicros: budget?.monthlyCapMicros ?? 0n,
        softAlertPercent: budget?.softAlertPercent ?? 0,
      });
      const after = await ledger.getProjectSpend(id);
      const view = (spend: ProjectSpend) => ({
        monthlyCapMicros: spend.budget?.monthlyCapMicros ?? null, softAlertPercent: spend.budget?.softAlertPercent ?? null,
      });
      await recordAuditEvent(db, {
        actor, organisationId: project.organisationId, action: budget === null ? 'project.clear_budget' : 'project.set_budget',
        resourceType: 'project', resourceId: id,
        changes: changedFields(view(before), view(after), { monthlyCapMicros: 'budget.monthly_cap_micros', softAlertPercent: 'budget.soft_alert_percent' }),
      });
      return after;
    },

    /**
     * Creates a gateway model. The base URL is checked against the SSRF rule here as well as at
     * the API edge, and the credential is sealed with AES-256-GCM before it touches the database.
     */
    async createGatewayModel(actor: Actor, input: CreateGatewayModelInput): Promise<{ gatewayModel: GatewayModel; propagation: Propagation }> {
      requirePlatformAdmin(actor);
      const allowPrivateNetwork = input.upstream.allowPrivateNetwork ?? false;
      requireUpstreamUrl(input.upstream.baseUrl, input.upstream.providerKind, allowPrivateNetwork);
      await requireResolvedUpstream(input.upstream.baseUrl, allowPrivateNetwork);
      const { version, stored } = await db.transaction(async (tx) => {
        const inserted = await insertGatewayModel(tx, {
          slug: input.slug,
          displayName: input.displayName ?? input.slug,
          defaultMaxTokens: input.defaultMaxTokens,
          maxContextTokens: input.maxContextTokens,
          inputPriceMicrosPerMtok: input.inputPriceMicrosPerMtok,
          outputPriceMicrosPerMtok: input.outputPriceMicrosPerMtok,
          providerInputCostMicrosPerMtok: input.providerInputCostMicrosPerMtok,
          providerOutputCostMicrosPerMtok: input.providerOutputCostMicrosPerMtok,
          upstream: {
            providerKind: input.upstream.providerKind, baseUrl: normaliseUpstreamUrl(input.upstream.baseUrl), model: input.upstream.model, allowPrivateNetwork,
          },
          upstreamApiKeyEncrypted: input.upstream.apiKey === undefined ? null : cipher.encrypt(input.upstream.apiKey, credentialContext(input.slug)),
        });
        if (!inserted) {
          throw new GatewayError('conflict', { publicMessage: `A gateway model with the slug "${input.slug}" already exists.`, param: 'slug' });
        }
        const created = (await findGatewayModel(tx, input.slug))!;
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'gateway_model.create', resourceType: 'gateway_model', resourceId: input.slug,
          changes: changedFields(undefined, gatewayModelAuditRecord(created), gatewayModelAuditFields),
        });
        return { version: await bumpConfigVersion(tx, [change('gateway_model', input.slug)]), stored: created };
      });
      const propagation = await publisher.publish(version);
      return { gatewayModel: withoutCredential(stored), propagation };
    },

    /**
     * Changes a gateway model (prices, limits, upstream target, credential) and pushes it. The
     * combination is checked after merging (max_context_tokens ≥ default_max_tokens); a new base
     * URL passes the SSRF rule with the model's exception as it will be (the body's
     * allowPrivateNetwork if given, else the stored one), and turning the exception off re-judges
     * the stored URL (400 naming upstream.allow_private_network when it needs it); a new
     * credential is sealed before it is stored.
     */
    async updateGatewayModel(actor: Actor, slug: string, input: UpdateGatewayModelInput): Promise<{ gatewayModel: GatewayModel; propagation: Propagation }> {
      requirePlatformAdmin(actor);
      const baseUrl = input.upstream?.baseUrl;
      const flag = input.upstream?.allowPrivateNetwork;
      // The URL the SSRF rule judges: a new one, or the stored one when only the exception changes.
      const judged = (model: StoredGatewayModel | undefined) => baseUrl ?? (flag !== undefined ? model?.upstream.baseUrl : undefined);
      // The exception the model will have: the body's value if given, else the stored one.
      const allowedFor = (model: StoredGatewayModel | undefined) => flag ?? model?.upstream.allowPrivateNetwork ?? false;
      const param: UpstreamRuleParam = baseUrl !== undefined ? 'upstream.base_url' : 'upstream.allow_private_network';
      // Judged before the row is locked (name resolution may take seconds): the form first, with
      // any query let through (whether it may stay depends on the stored provider kind).
      const seen = baseUrl === undefined && flag === undefined ? undefined : await findGatewayModel(db, slug);
      const seenUrl = judged(seen);
      if (baseUrl !== undefined) requireUpstreamUrl(baseUrl, apiVersionQueryProviderKind, allowedFor(seen));
      if (seenUrl !== undefined) await requireResolvedUpstream(seenUrl, allowedFor(seen), param);
      const { version, stored } = await db.transaction(async (tx) => {
        const current = await findGatewayModel(tx, slug, { forUpdate: true });
        if (!current) throw gatewayModelNotFound(slug);
        const currentUrl = judged(current);
        if (currentUrl !== undefined) {
          requireUpstreamUrl(currentUrl, current.upstream.providerKind, allowedFor(current), param);
          // A concurrent change between the read above and the lock: judge the name again under the lock.
          if (currentUrl !== seenUrl || allowedFor(current) !== allowedFor(seen)) await requireResolvedUpstream(currentUrl, allowedFor(current), param);
        }
        const defaultMaxTokens = input.defaultMaxTokens ?? current.defaultMaxTokens;
        const maxContextTokens = input.maxContextTokens ?? current.maxContextTokens;
        if (maxContextTokens < defaultMaxTokens) {
          throw new GatewayError('invalid_request', {
            publicMessage: `Invalid request: max_context_tokens: must be at least default_max_tokens (${defaultMaxTokens}).`,
            param: input.maxContextTokens !== undefined ? 'max_context_tokens' : 'default_max_tokens',
          });
        }
        const apiKey = input.upstream?.apiKey;
        const changes: GatewayModelChanges = {
          displayName: input.displayName,
          defaultMaxTokens: input.defaultMaxTokens,
          maxContextTokens: input.maxContextTokens,
          inputPriceMicrosPerMtok: input.inputPriceMicrosPerMtok,
          outputPriceMicrosPerMtok: input.outputPriceMicrosPerMtok,
          providerInputCostMicrosPerMtok: input.providerInputCostMicrosPerMtok,
          providerOutputCostMicrosPerMtok: input.providerOutputCostMicrosPerMtok,
          upstreamBaseUrl: baseUrl === undefined ? undefined : normaliseUpstreamUrl(baseUrl),
          upstreamModel: input.upstream?.model,
          upstreamApiKeyEncrypted: apiKey === undefined ? undefined : apiKey === null ? null : cipher.encrypt(apiKey, credentialContext(slug)),
          upstreamAllowPrivateNetwork: flag,
        };
        await updateGatewayModelFields(tx, slug, changes);
        const updated = (await findGatewayModel(tx, slug))!;
        const auditChanges: AuditChanges = changedFields(gatewayModelAuditRecord(current), gatewayModelAuditRecord(updated), gatewayModelAuditFields);
        // A replaced credential is a change even though both sides read "(set)".
        if (typeof apiKey === 'string' && current.upstreamApiKeyEncrypted !== null) auditChanges['upstream.api_key'] = { before: '(set)', after: '(replaced)' };
        await recordAuditEvent(tx, { actor, organisationId: null, action: 'gateway_model.update', resourceType: 'gateway_model', resourceId: slug, changes: auditChanges });
        return { version: await bumpConfigVersion(tx, [change('gateway_model', slug)]), stored: updated };
      });
      const propagation = await publisher.publish(version);
      return { gatewayModel: withoutCredential(stored), propagation };
    },

    /** A page of gateway models ordered by slug (platform admins only: they show upstream targets). */
    async listGatewayModels(actor: Actor, page: PageRequest): Promise<Page<GatewayModel>> {
      requirePlatformAdmin(actor);
      const result = await listGatewayModels(db, page);
      return { items: result.items.map(withoutCredential), hasMore: result.hasMore };
    },

    /** The gateway model with this slug (not_found otherwise). */
    async getGatewayModel(actor: Actor, slug: string): Promise<GatewayModel> {
      requirePlatformAdmin(actor);
      const model = await findGatewayModel(db, slug);
      if (!model) throw gatewayModelNotFound(slug);
      return withoutCredential(model);
    },

    /** Issues a platform-admin token (secret returned once). */
    async createPlatformAdminToken(actor: Actor, input: { name: string }): Promise<{ token: AdminTokenInfo; secret: string }> {
      requirePlatformAdmin(actor);
      return db.transaction(async (tx) => {
        const issued = await issueAdminToken(tx, { name: input.name, organisationId: null, origin: actor.kind === 'cli' ? 'cli' : 'api' });
        await recordAuditEvent(tx, {
          actor, organisationId: null, action: 'admin_token.create', resourceType: 'admin_token', resourceId: issued.token.id,
          changes: changedFields(undefined, issued.token, tokenAuditFields),
        });
        return issued;
      });
    },

    /** A page of platform-admin tokens in creation order (revoked ones included). */
    async listPlatformAdminTokens(actor: Actor, page: PageRequest): Promise<Page<AdminTokenInfo>> {
      requirePlatformAdmin(actor);
      await requireTokenCursor(page, null);
      return listAdminTokens(db, null, page);
    },

    /** Revokes a platform-admin token (never the last one). An organisation token sees none: not_found. */
    async revokePlatformAdminToken(actor: Actor, tokenId: string): Promise<AdminTokenInfo> {
      return db.transaction(async (tx) => {
        const token = actor.kind !== 'organisation_token' && isId('adminToken', tokenId) ? await findAdminToken(tx, tokenId) : undefined;
        if (!token || token.organisationId !== null) throw notFound('platform-admin token', tokenId, 'id');
        const { before, after } = await revokeAdminToken(tx, tokenId);
        if (before.revokedAt === null) {
          await recordAuditEvent(tx, {
            actor, organisationId: null, action: 'admin_token.revoke', resourceType: 'admin_token', resourceId: tokenId,
            changes: changedFields(before, after, tokenAuditFields),
          });
        }
        return after;
      });
    },

    /** Issues a token that sees and changes only this organisation (platform admins only). */
    async createOrganisationToken(actor: Actor, organisationId: string, input: { name: string }): Promise<{ token: AdminTokenInfo; secret: string }> {
      await requireOrganisation(actor, organisationId);
      requirePlatformAdmin(actor);
      return db.transaction(async (tx) => {
        const issued = await issueAdminToken(tx, { name: input.name, organisationId, origin: actor.kind === 'cli' ? 'cli' : 'api' });
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'admin_token.create', resourceType: 'admin_token', resourceId: issued.token.id,
          changes: changedFields(undefined, issued.token, tokenAuditFields),
        });
        return issued;
      });
    },

    /** A page of an organisation's tokens in creation order (revoked ones included). */
    async listOrganisationTokens(actor: Actor, organisationId: string, page: PageRequest): Promise<Page<AdminTokenInfo>> {
      await requireOrganisation(actor, organisationId);
      await requireTokenCursor(page, organisationId);
      return listAdminTokens(db, organisationId, page);
    },

    /** Revokes one of an organisation's tokens (its own automation may revoke them too). */
    async revokeOrganisationToken(actor: Actor, organisationId: string, tokenId: string): Promise<AdminTokenInfo> {
      await requireOrganisation(actor, organisationId);
      return db.transaction(async (tx) => {
        const token = isId('adminToken', tokenId) ? await findAdminToken(tx, tokenId) : undefined;
        if (!token || token.organisationId !== organisationId) throw notFound('token of this organisation', tokenId, 'token_id');
        const { before, after } = await revokeAdminToken(tx, tokenId);
        if (before.revokedAt === null) {
          await recordAuditEvent(tx, {
            actor, organisationId, action: 'admin_token.revoke', resourceType: 'admin_token', resourceId: tokenId,
            changes: changedFields(before, after, tokenAuditFields),
          });
        }
        return after;
      });
    },

    /**
     * A page of the audit log, oldest first. A platform admin reads everything or one
     * organisation's events; an organisation token reads only its organisation's.
     */
    async listAuditEvents(actor: Actor, query: { organisationId?: string | undefined; afterId?: bigint | undefined; limit: number }): Promise<Page<AuditEvent>> {
      let organisationId = query.organisationId;
      if (organisationId !== undefined) await requireOrganisation(actor, organisationId);
      if (actor.kind === 'organisation_token') organisationId = actor.organisationId;
      return listAuditEvents(db, { organisationId, afterId: query.afterId, limit: query.limit });
    },

    /**
     * Creates the built-in `demo` model pointing at `baseUrl` unless a model with that slug
     * exists (it is never overwritten). The URL is operator configuration, not API input, so
     * the SSRF rule does not apply. Resolves whether it was created.
     */
    async seedDemoModel(baseUrl: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        const inserted = await insertGatewayModel(tx, {
          slug: demoGatewayModel.slug,
          displayName: demoGatewayModel.displayName,
          defaultMaxTokens: demoGatewayModel.defaultMaxTokens,
          maxContextTokens: demoGatewayModel.maxContextTokens,
          inputPriceMicrosPerMtok: demoGatewayModel.inputPriceMicrosPerMtok,
          outputPriceMicrosPerMtok: demoGatewayModel.outputPriceMicrosPerMtok,
          providerInputCostMicrosPerMtok: demoGatewayModel.providerInputCostMicrosPerMtok,
          providerOutputCostMicrosPerMtok: demoGatewayModel.providerOutputCostMicrosPerMtok,
          // No per-model exception: the demo relies on ADMIN_ALLOW_PRIVATE_UPSTREAMS=true, as before.
          upstream: { providerKind: 'openai_compatible', baseUrl: normaliseUpstreamUrl(baseUrl), model: demoGatewayModel.upstreamModel, allowPrivateNetwork: false },
          upstreamApiKeyEncrypted: null,
        });
        if (inserted) {
          const created = (await findGatewayModel(tx, demoGatewayModel.slug))!;
          await recordAuditEvent(tx, {
            actor: systemActor, organisationId: null, action: 'gateway_model.create', resourceType: 'gateway_model', resourceId: demoGatewayModel.slug,
            changes: changedFields(undefined, gatewayModelAuditRecord(created), gatewayModelAuditFields),
          });
          await bumpConfigVersion(tx, [change('gateway_model', demoGatewayModel.slug)]);
        }
        return inserted;
      });
    },
  };

  /** The project named by a filter must belong to this organisation (not_found otherwise). */
  async function requireProjectOf(actor: Actor, organisationId: string, projectId: string): Promise<void> {
    const project = isId('project', projectId) ? await findProject(db, projectId) : undefined;
    if (!project || project.organisationId !== organisationId || !canSeeOrganisation(actor, organisationId)) {
      throw notFound('project of this organisation', projectId, 'project_id');
    }
  }

  /** A token-list cursor must name a token of the same list. */
  async function requireTokenCursor(page: PageRequest, organisationId: string | null): Promise<void> {
    if (page.after === undefined) return;
    const after = isId('adminToken', page.after) ? await findAdminToken(db, page.after) : undefined;
    if (!after || after.organisationId !== organisationId) {
      throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no token of this list has this id.', param: 'after' });
    }
  }
}
