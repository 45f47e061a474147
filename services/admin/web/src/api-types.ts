import type { TokenClassFigures } from './pages/platform/token-classes.ts';
// The JSON shapes of the admin API answers the dashboard reads (services/admin/openapi.json is the
// reference). Money fields ending _micros are decimal strings of micro-rupees.

/** A cursor-paged list (projects, organisations, gateway models): pass the last id as `after`. */
export interface ListPage<Item> {
  object: 'list';
  data: Item[];
  has_more: boolean;
}

/** An organisation. */
export interface Organisation {
  id: string;
  name: string;
  status: 'active' | 'suspended';
  billing_mode: 'commercial' | 'internal';
}

/** A project with its active key's public details (never the secret). */
export interface Project {
  id: string;
  organisation_id: string;
  name: string;
  status: 'active' | 'disabled';
  api_key: { id: string; hint: string; created_at: string } | null;
  created_at: string;
}

/** The answer to creating a project or rotating its key: the only time the secret is shown. */
export interface ProjectWithSecret {
  project: Project;
  api_key: string;
}

/** A project's monthly budget and its spend this month (Asia/Kolkata). */
export interface ProjectBudget {
  project_id: string;
  month: string;
  monthly_cap_micros: string | null;
  soft_alert_percent: number | null;
  settled_micros: string;
  held_micros: string;
  spent_micros: string;
  soft_alert_raised: boolean;
}

/** The parts of an organisation's balance the dashboard shows. */
export interface Balance {
  available_micros: string;
  held_micros: string;
  debited_micros: string;
}

/** One usage record, as /usage lists it and live updates send it (µ₹ as decimal strings). */
export interface UsageRecord {
  id: string;
  project_id: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cost_micros: string;
  provider_cost_micros: string;
  debited_micros: string;
  usage_source: 'upstream' | 'gateway_estimate';
  request_id: string;
  created_at: string;
  overrun_output_tokens: number;
  /** The usage by token price class, the classes with tokens only; absent: plain input and output. */
  cost_by_class?: Record<string, { tokens: number; cost_micros: string; provider_cost_micros: string }>;
}

/** One row of /usage/summary: a day (IST) and model, or with group_by=project also a project. */
export interface UsageSummaryRow {
  day: string;
  model: string;
  project_id?: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cost_micros: string;
  provider_cost_micros: string;
  /** Tokens and cost per token class of the row's requests recorded by class, by class name. */
  token_classes: TokenClassFigures[];
  /** The row's requests recorded without classes. */
  unclassified_requests: number;
}

/** An alert raised for an organisation (budget soft alert or low balance). */
export interface Alert {
  id: string;
  kind: 'budget_soft' | 'low_balance';
  organisation_id: string;
  project_id: string | null;
  occurred_at: string;
  message: string;
}
