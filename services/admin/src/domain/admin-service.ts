import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { issueSecret } from '@gateway/secrets';
import type {
  Balance, BillingMode, GatewayModel, Organisation, OrganisationStatus, Page, PageRequest, Project, Propagation, UsageRecord,
} from './admin-records.ts';
import type { ConfigPublisher } from './config-publisher.ts';
import { bumpConfigVersion, credentialContext } from './config-snapshot.ts';
import type { CredentialCipher } from './credential-cipher.ts';
import {
  findGatewayModel, insertGatewayModel, listGatewayModels, unknownGatewayModelSlugs, withoutCredential,
} from './gateway-model-store.ts';
import { isId, newId } from './ids.ts';
import type { LedgerPort } from './ledger-port.ts';
import {
  findOrganisation, insertOrganisation, listOrganisations, organisationExists, replaceAllowedModels, updateOrganisationFields,
} from './organisation-store.ts';
import { findProject, insertApiKey, insertProject, listProjects } from './project-store.ts';
import { normaliseUpstreamUrl, upstreamUrlProblem } from './upstream-url.ts';

/** What the admin service is built from. */
export interface AdminServiceDeps {
  db: Database;
  ledger: LedgerPort;
  cipher: CredentialCipher;
  publisher: ConfigPublisher;
  /** true: upstream base URLs may be http and private addresses (development, demo). */
  allowPrivateUpstreams: boolean;
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
  upstream: { providerKind: 'openai_compatible'; baseUrl: string; model: string; apiKey?: string | undefined };
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

function notFound(what: string, id: string, param: string): GatewayError {
  const publicMessage = echoableIdPattern.test(id) ? `No ${what} has the id "${id}".` : `No ${what} has this id.`;
  return new GatewayError('not_found', { publicMessage, param });
}

/** The admin's business operations, with no transport in them. */
export type AdminService = ReturnType<typeof createAdminService>;

/** Creates the admin's business operations over its database, the ledger and the config stream. */
export function createAdminService(deps: AdminServiceDeps) {
  const { db, ledger, cipher, publisher } = deps;

  async function requireOrganisation(id: string): Promise<Organisation> {
    const organisation = isId('organisation', id) ? await findOrganisation(db, id) : undefined;
    if (!organisation) throw notFound('organisation', id, 'id');
    return organisation;
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

  return {
    /**
     * Creates an organisation: its ledger account is opened first (idempotent on the new id),
     * so a ledger failure leaves nothing behind in the admin.
     */
    async createOrganisation(input: CreateOrganisationInput): Promise<{ organisation: Organisation; propagation: Propagation }> {
      await requireKnownSlugs(input.allowedGatewayModels);
      const id = newId('organisation');
      await ledger.openAccount(id);
      const version = await db.transaction(async (tx) => {
        await insertOrganisation(tx, { id, status: 'active', ...input });
        return bumpConfigVersion(tx);
      });
      const propagation = await publisher.publish(version);
      return { organisation: (await findOrganisation(db, id))!, propagation };
    },

    /** A page of organisations in creation order. */
    async listOrganisations(page: PageRequest): Promise<Page<Organisation>> {
      if (page.after !== undefined && !(isId('organisation', page.after) && await organisationExists(db, page.after))) {
        throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no organisation has this id.', param: 'after' });
      }
      return listOrganisations(db, page);
    },

    /** The organisation with this id (not_found otherwise). */
    getOrganisation: requireOrganisation,

    /** Changes an organisation and pushes the new configuration (a suspension is a hard cutover). */
    async updateOrganisation(id: string, input: UpdateOrganisationInput): Promise<{ organisation: Organisation; propagation: Propagation }> {
      if (input.allowedGatewayModels !== undefined) await requireKnownSlugs(input.allowedGatewayModels);
      const version = await db.transaction(async (tx) => {
        const current = isId('organisation', id) ? await findOrganisation(tx, id, { forUpdate: true }) : undefined;
        if (!current) throw notFound('organisation', id, 'id');
        await updateOrganisationFields(tx, id, input);
        if (input.allowedGatewayModels !== undefined) await replaceAllowedModels(tx, id, input.allowedGatewayModels);
        return bumpConfigVersion(tx);
      });
      const propagation = await publisher.publish(version);
      return { organisation: (await findOrganisation(db, id))!, propagation };
    },

    /**
     * Credits an organisation's balance through the ledger, idempotently per Idempotency-Key:
     * the same key and body return the first result; the same key with another body is refused.
     */
    async creditOrganisation(organisationId: string, input: CreditInput): Promise<CreditOutcome> {
      await requireOrganisation(organisationId);
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
      const completed = await db.query<{ response: StoredCreditResponse }>(
        `UPDATE manual_credits SET response = $2, completed_at = clock_timestamp()
         WHERE credit_id = $1 AND response IS NULL RETURNING response`,
        [creditId, JSON.stringify(response)],
      );
      if (completed.rows.length === 1) return fromStoredCredit(response, false);
      // A concurrent call with the same key completed first: answer with its result.
      const winner = await db.query<{ response: StoredCreditResponse }>('SELECT response FROM manual_credits WHERE credit_id = $1', [creditId]);
      return fromStoredCredit(winner.rows[0]!.response, true);
    },

    /** An organisation's balance as the ledger holds it. */
    async getBalance(organisationId: string): Promise<Balance> {
      await requireOrganisation(organisationId);
      return ledger.getBalance(organisationId);
    },

    /** A page of an organisation's usage records, newest first. */
    async listUsage(organisationId: string, query: UsageQuery): Promise<{ records: UsageRecord[]; nextCursor: string | null }> {
      await requireOrganisation(organisationId);
      if (query.projectId !== undefined) {
        const project = isId('project', query.projectId) ? await findProject(db, query.projectId) : undefined;
        if (!project || project.organisationId !== organisationId) throw notFound('project of this organisation', query.projectId, 'project_id');
      }
      const page = await ledger.listUsage({
        organisationId, projectId: query.projectId, modelSlug: query.modelSlug, pageSize: query.limit, pageToken: query.cursor,
      });
      return { records: page.records, nextCursor: page.nextPageToken };
    },

    /**
     * Creates a project and its API key. Returns the secret (shown once; only its hash is
     * stored) after connected proxies acknowledged the version holding the key.
     */
    async createProject(organisationId: string, input: { name: string }): Promise<{ project: Project; apiKey: string; propagation: Propagation }> {
      await requireOrganisation(organisationId);
      const projectId = newId('project');
      const issued = issueSecret('apiKey');
      const version = await db.transaction(async (tx) => {
        await insertProject(tx, { id: projectId, organisationId, name: input.name });
        await insertApiKey(tx, { id: newId('apiKey'), projectId, keyHash: issued.hash, hint: issued.hint });
        return bumpConfigVersion(tx);
      });
      const propagation = await publisher.publish(version);
      return { project: (await findProject(db, projectId))!, apiKey: issued.secret, propagation };
    },

    /** A page of an organisation's projects in creation order. */
    async listProjects(organisationId: string, page: PageRequest): Promise<Page<Project>> {
      await requireOrganisation(organisationId);
      if (page.after !== undefined) {
        const after = isId('project', page.after) ? await findProject(db, page.after) : undefined;
        if (!after || after.organisationId !== organisationId) {
          throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no project of this organisation has this id.', param: 'after' });
        }
      }
      return listProjects(db, organisationId, page);
    },

    /** The project with this id (not_found otherwise). */
    async getProject(id: string): Promise<Project> {
      const project = isId('project', id) ? await findProject(db, id) : undefined;
      if (!project) throw notFound('project', id, 'id');
      return project;
    },

    /**
     * Creates a gateway model. The base URL is checked against the SSRF rule here as well as at
     * the API edge, and the credential is sealed with AES-256-GCM before it touches the database.
     */
    async createGatewayModel(input: CreateGatewayModelInput): Promise<{ gatewayModel: GatewayModel; propagation: Propagation }> {
      const problem = upstreamUrlProblem(input.upstream.baseUrl, { allowPrivate: deps.allowPrivateUpstreams });
      if (problem) throw new GatewayError('invalid_request', { publicMessage: `Invalid request: upstream.base_url: ${problem}.`, param: 'upstream.base_url' });
      const version = await db.transaction(async (tx) => {
        const inserted = await insertGatewayModel(tx, {
          slug: input.slug,
          displayName: input.displayName ?? input.slug,
          defaultMaxTokens: input.defaultMaxTokens,
          maxContextTokens: input.maxContextTokens,
          inputPriceMicrosPerMtok: input.inputPriceMicrosPerMtok,
          outputPriceMicrosPerMtok: input.outputPriceMicrosPerMtok,
          providerInputCostMicrosPerMtok: input.providerInputCostMicrosPerMtok,
          providerOutputCostMicrosPerMtok: input.providerOutputCostMicrosPerMtok,
          upstream: { providerKind: input.upstream.providerKind, baseUrl: normaliseUpstreamUrl(input.upstream.baseUrl), model: input.upstream.model },
          upstreamApiKeyEncrypted: input.upstream.apiKey === undefined ? null : cipher.encrypt(input.upstream.apiKey, credentialContext(input.slug)),
        });
        if (!inserted) {
          throw new GatewayError('conflict', { publicMessage: `A gateway model with the slug "${input.slug}" already exists.`, param: 'slug' });
        }
        return bumpConfigVersion(tx);
      });
      const propagation = await publisher.publish(version);
      return { gatewayModel: withoutCredential((await findGatewayModel(db, input.slug))!), propagation };
    },

    /** A page of gateway models ordered by slug. */
    async listGatewayModels(page: PageRequest): Promise<Page<GatewayModel>> {
      const result = await listGatewayModels(db, page);
      return { items: result.items.map(withoutCredential), hasMore: result.hasMore };
    },

    /** The gateway model with this slug (not_found otherwise). */
    async getGatewayModel(slug: string): Promise<GatewayModel> {
      const model = await findGatewayModel(db, slug);
      if (!model) {
        const publicMessage = gatewayModelSlugPattern.test(slug) ? `No gateway model has the slug "${slug}".` : 'No gateway model has this slug.';
        throw new GatewayError('not_found', { publicMessage, param: 'slug' });
      }
      return withoutCredential(model);
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
          upstream: { providerKind: 'openai_compatible', baseUrl: normaliseUpstreamUrl(baseUrl), model: demoGatewayModel.upstreamModel },
          upstreamApiKeyEncrypted: null,
        });
        if (inserted) await bumpConfigVersion(tx);
        return inserted;
      });
    },
  };
}
