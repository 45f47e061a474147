/** The admin's records as the domain sees them (camelCase, money as bigint µ₹). */

/** Whether an organisation may use the gateway. */
export type OrganisationStatus = 'active' | 'suspended';
/** commercial: prepaid wallet, debited; internal: sponsored, usage recorded but not debited. */
export type BillingMode = 'commercial' | 'internal';
/** Whether a project's key may be used. */
export type ProjectStatus = 'active' | 'disabled';

/** A billing entity created by a platform admin. */
export interface Organisation {
  id: string;
  name: string;
  status: OrganisationStatus;
  billingMode: BillingMode;
  /** Requests per minute shared by all of its projects and keys. */
  rpmLimit: number;
  /** Slugs of the gateway models it may use, sorted. */
  allowedGatewayModels: string[];
  /** false: its Responses are never stored (`store: true` is a 400 at the proxy). */
  storeResponses: boolean;
  /** Its own retention of stored Responses, seconds, at most the platform's; null: the platform's. */
  responseRetentionS: number | null;
  createdAt: Date;
}

/** What is safe to show about a project's API key: never the secret, never its hash. */
interface ApiKeyInfo {
  id: string;
  /** e.g. `gwsk_…x7Qa`. */
  hint: string;
  createdAt: Date;
}

/** A cost centre of an organisation, with its one active API key. */
export interface Project {
  id: string;
  organisationId: string;
  name: string;
  status: ProjectStatus;
  /** The active key; null only if a project has none (not reachable through the API today). */
  apiKey: ApiKeyInfo | null;
  createdAt: Date;
}

/** A customer-facing model name with its prices and (concealed) upstream target: see catalog/domain/gateway-model-fields.ts. */
export type { GatewayModel } from '../../catalog/domain/gateway-model-fields.ts';

/** An organisation's wallet as the ledger reports it. credited = available + held + debited. */
export interface Balance {
  organisationId: string;
  creditedMicros: bigint;
  availableMicros: bigint;
  heldMicros: bigint;
  debitedMicros: bigint;
}

/** Where a usage record's token counts came from. */
type UsageSource = 'upstream' | 'gateway_estimate';

/** One settled request as the ledger recorded it. */
export interface UsageRecord {
  id: string;
  projectId: string;
  modelSlug: string;
  inputTokens: bigint;
  outputTokens: bigint;
  costMicros: bigint;
  providerCostMicros: bigint;
  debitedMicros: bigint;
  usageSource: UsageSource;
  requestId: string;
  createdAt: Date;
  /** Output tokens produced beyond the Reserve, neither delivered nor billed (BOUNDED_OVERRUN); 0: none. */
  overrunOutputTokens: bigint;
  /** The usage by token price class as its Settle gave it, costs summing to costMicros; empty: plain input and output. */
  tokenClasses: UsageTokenClass[];
}

/** One token price class of a usage record or summary row: tokens, customer cost and provider cost, µ₹. */
export interface UsageTokenClass {
  /** e.g. `cached_input`, `cache_write_1h`, `reasoning` (docs/api-conventions.md, "Token classes"). */
  tokenClass: string;
  tokens: bigint;
  costMicros: bigint;
  providerCostMicros: bigint;
}

/** One page of a list walked by cursor. */
export interface Page<Item> {
  items: Item[];
  hasMore: boolean;
}

/** Paging of a list: at most `limit` items after the item `after` (exclusive). */
export interface PageRequest {
  limit: number;
  after?: string | undefined;
}

/** Whether connected proxies acknowledged a change before its call returned. */
export interface Propagation {
  /** false: the wait timed out; the change is committed and reaches proxies when they resync. */
  acknowledged: boolean;
  /** Proxies that had not acknowledged when the wait ended. */
  pendingProxyIds: string[];
}

/** A project's monthly budget and its spend this month (calendar month, Asia/Kolkata), from the ledger. */
export interface ProjectSpend {
  projectId: string;
  /** e.g. `2026-11`. */
  month: string;
  /** Customer-price cost settled this month, µ₹ (both billing modes). */
  settledMicros: bigint;
  /** Held by open reservations of the project, µ₹. */
  heldMicros: bigint;
  /** null when the project has no budget. */
  budget: { monthlyCapMicros: bigint; softAlertPercent: number } | null;
  /** Whether this month's soft alert has been raised. */
  softAlertRaised: boolean;
}

/** Usage of one day (Asia/Kolkata) and gateway model, summed; money in µ₹. */
export interface UsageSummaryRow {
  /** e.g. `2026-11-21`. */
  day: string;
  modelSlug: string;
  requests: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  costMicros: bigint;
  providerCostMicros: bigint;
  debitedMicros: bigint;
  /** Set when summarized over every organisation; '' otherwise. */
  organisationId: string;
  /** Set when grouped by project; '' otherwise. */
  projectId: string;
  /** Set when summarized over every organisation: the billing mode the usage was recorded under. */
  billingMode: 'commercial' | 'internal' | undefined;
  /** Per token price class, summed over the row's records that carry classes, ordered by class name. */
  tokenClasses: UsageTokenClass[];
  /** Records of the row without classes; their cost is costMicros − the sum of the class costs. */
  unclassifiedRequests: bigint;
}

/** A soft budget alert the ledger raised (once per project per month, PROJECT_BUDGET). */
export interface LedgerBudgetAlert {
  /** Increasing decimal; the cursor for the next page. */
  id: string;
  organisationId: string;
  projectId: string;
  /** e.g. `2026-11` (Asia/Kolkata). */
  month: string;
  /** Spend (settled + held) when it was raised, µ₹. */
  spentMicros: bigint;
  monthlyCapMicros: bigint;
  softAlertPercent: number;
  raisedAt: Date;
}
