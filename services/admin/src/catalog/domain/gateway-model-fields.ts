import { camelCase, type CamelCase } from './camel-case.ts';
import { providerKinds } from './provider-kinds.ts';

/**
 * The Gateway Model record, declared once as plain facts: every field with its SQL type (and so
 * its domain value), its column, and whether a response shows it, a create may give it and an
 * update may change it. The domain types below, the store's row mapping and SQL and the audit
 * entries are derived from `gatewayModelFields`; the HTTP rules and descriptions of the same
 * fields live in catalog/http/gateway-model-schema.ts, whose keys and parsed types the compiler
 * checks against this table. A new field is one entry here, one there, and its SQL column
 * (migration) — and, if proxies need it, the config stream's message (config-stream/config-update.ts).
 */

/** The slug rule of a gateway model (also enforced by a CHECK constraint). */
export const gatewayModelSlugPattern = /^[a-z0-9][a-z0-9._:/-]{0,127}$/;

/** The largest price or cost per million tokens, µ₹ (₹1,000,000,000 per million tokens). */
export const maxPriceMicrosPerMtok = 1_000_000_000_000_000n;

/** What a gateway model serves: chat (chat completions, Responses, Messages) or embeddings. */
export const gatewayModelKinds = ['chat', 'embedding'] as const;

/** The kinds of input a chat model's upstream accepts besides text. */
export const gatewayModelInputModalities = ['text', 'image', 'audio'] as const;

/** Effort levels a model's upstream may take: OpenAI's reasoning_effort values and Anthropic's output_config.effort values. */
export const reasoningEffortValues = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;

/** Anthropic thinking modes a model's upstream may take ("disabled" is always accepted). */
export const thinkingModeValues = ['enabled', 'adaptive'] as const;

/**
 * The token price classes of a price sheet, each with a customer price and a provider cost:
 * name stem, and what it is when a create leaves it out. The input classes are parts of the
 * prompt and default to the input price (cost); reasoning is part of the output and, when null,
 * is priced as output (so it follows a later change of the output price).
 */
export const tokenClassPrices = [
  { stem: 'cached_input', fallback: 'input' },
  { stem: 'cache_write_5m', fallback: 'input' },
  { stem: 'cache_write_1h', fallback: 'input' },
  { stem: 'reasoning', fallback: 'output' },
  { stem: 'audio_input', fallback: 'input' },
  { stem: 'image_input', fallback: 'input' },
] as const;

/** The SQL type a field's parameters are cast to. */
type GatewayModelSqlType = 'text' | 'text[]' | 'integer' | 'bigint' | 'boolean' | 'timestamptz';

/** The domain value of each SQL type: bigint is money (µ₹), Date an instant. */
interface SqlValue { 'text': string; 'text[]': string[]; 'integer': number; 'bigint': bigint; 'boolean': boolean; 'timestamptz': Date }

/** One field of the record, as plain facts. Money is µ₹ (bigint), prices per million tokens. */
export interface GatewayModelFieldFacts {
  /** Its SQL type, which also gives its domain value. */
  readonly sqlType: GatewayModelSqlType;
  /** The values a text field (or each element of a text[] field) may take; absent: any. */
  readonly values?: readonly string[];
  /** true: null is a value of its own (e.g. reasoning priced as output), so an update can set null. */
  readonly nullable?: true;
  /** false: write-only, never held by the record nor shown (a credential). */
  readonly shown?: false;
  /** How a create gives it: required, optional (absent stays absent), defaulted (absent becomes a default); absent: never. */
  readonly create?: 'required' | 'optional' | 'defaulted';
  /** true: an update may change it; 'removable': also set it to null to remove it (a write-only field); absent: it cannot change. */
  readonly update?: true | 'removable';
  /** Its SQL column; absent: the group's column prefix and the field's name; null: not stored as is. */
  readonly column?: string | null;
}

/** A nested object of the record (the upstream target): always given on create, optional on update. */
export interface GatewayModelGroupFacts {
  /** Prefix of its fields' SQL columns. */
  readonly columnPrefix: string;
  /** Its fields, by name. */
  readonly fields: Readonly<Record<string, GatewayModelFieldFacts>>;
}

const inputClassPrice = { sqlType: 'bigint', create: 'optional', update: true } as const;
const outputClassPrice = { sqlType: 'bigint', nullable: true, create: 'defaulted', update: true } as const;
type InputClassStem = Exclude<(typeof tokenClassPrices)[number]['stem'], 'reasoning'>;
/** The static shape of tokenClassPriceFields(). */
type TokenClassPriceFields = { [S in InputClassStem as `${S}_price_micros_per_mtok`]: typeof inputClassPrice }
  & { reasoning_price_micros_per_mtok: typeof outputClassPrice }
  & { [S in InputClassStem as `provider_${S}_cost_micros_per_mtok`]: typeof inputClassPrice }
  & { provider_reasoning_cost_micros_per_mtok: typeof outputClassPrice };

/** The price sheet fields of every token class, customer prices first then provider costs (the record's order). */
function tokenClassPriceFields(): TokenClassPriceFields {
  const customer: Record<string, GatewayModelFieldFacts> = {};
  const provider: Record<string, GatewayModelFieldFacts> = {};
  for (const { stem, fallback } of tokenClassPrices) {
    customer[`${stem}_price_micros_per_mtok`] = fallback === 'output' ? outputClassPrice : inputClassPrice;
    provider[`provider_${stem}_cost_micros_per_mtok`] = fallback === 'output' ? outputClassPrice : inputClassPrice;
  }
  return { ...customer, ...provider } as TokenClassPriceFields;
}

/** Every field of the Gateway Model record by name, in the order requests, responses and the OpenAPI document list them. */
export const gatewayModelFields = {
  slug: { sqlType: 'text', create: 'required' },
  display_name: { sqlType: 'text', create: 'optional', update: true },
  kind: { sqlType: 'text', values: gatewayModelKinds, create: 'defaulted' },
  input_modalities: { sqlType: 'text[]', values: gatewayModelInputModalities, create: 'defaulted', update: true },
  reasoning_efforts: { sqlType: 'text[]', values: reasoningEffortValues, create: 'defaulted', update: true },
  thinking_modes: { sqlType: 'text[]', values: thinkingModeValues, create: 'defaulted', update: true },
  max_thinking_budget_tokens: { sqlType: 'integer', create: 'defaulted', update: true },
  returns_reasoning: { sqlType: 'boolean', create: 'defaulted', update: true },
  default_max_tokens: { sqlType: 'integer', create: 'required', update: true },
  max_context_tokens: { sqlType: 'integer', create: 'required', update: true },
  input_price_micros_per_mtok: { sqlType: 'bigint', create: 'required', update: true },
  output_price_micros_per_mtok: { sqlType: 'bigint', create: 'required', update: true },
  // Omitted on create: 0 (a model whose provider cost is unknown or free).
  provider_input_cost_micros_per_mtok: { sqlType: 'bigint', create: 'defaulted', update: true },
  provider_output_cost_micros_per_mtok: { sqlType: 'bigint', create: 'defaulted', update: true },
  ...tokenClassPriceFields(),
  upstream: {
    columnPrefix: 'upstream_',
    fields: {
      provider_kind: { sqlType: 'text', values: providerKinds, create: 'required', column: 'provider_kind' },
      base_url: { sqlType: 'text', create: 'required', update: true },
      model: { sqlType: 'text', create: 'required', update: true },
      // Sealed before it is stored (gateway-model-store.ts keeps its column), never returned.
      api_key: { sqlType: 'text', shown: false, create: 'optional', update: 'removable', column: null },
      // Whether the sealed credential column is set: derived by the store, never written.
      has_api_key: { sqlType: 'boolean', column: null },
      allow_private_network: { sqlType: 'boolean', create: 'defaulted', update: true },
      // Where the model's own upstream ("primary") stands among its deployments (upstream-deployments-service.ts).
      priority: { sqlType: 'integer', create: 'defaulted', update: true },
      weight: { sqlType: 'integer', create: 'defaulted', update: true },
    },
  },
  created_at: { sqlType: 'timestamptz' },
} as const satisfies Readonly<Record<string, GatewayModelFieldFacts | GatewayModelGroupFacts>>;

/** The type of the field table: what the HTTP schema's keys are checked against. */
export type GatewayModelFields = typeof gatewayModelFields;

/** The domain value of a field. */
type ValueOf<F> = F extends GatewayModelFieldFacts
  ? (F extends { values: readonly (infer V extends string)[] } ? (F['sqlType'] extends 'text[]' ? V[] : V) : SqlValue[F['sqlType']])
    | (F extends { nullable: true } ? null : never)
  : never;
/** Keys of `T` whose facts match `Face`, camelCased. */
type KeysWhere<T, Face> = { [K in keyof T]: T[K] extends Face ? K : never }[keyof T] & string;
/** One object type with no intersections (so the HTTP schema's parsed types compare equal). */
type Flat<T> = { [K in keyof T]: T[K] } & {};

/** The record of a field table: its shown fields (groups as objects). */
type RecordOf<T> = Flat<{ -readonly [K in Exclude<keyof T & string, KeysWhere<T, { shown: false }>> as CamelCase<K>]:
  T[K] extends GatewayModelGroupFacts ? RecordOf<T[K]['fields']> : ValueOf<T[K]> }>;
/** A create input of a field table: required and defaulted fields present, optional ones optional. */
type CreateOf<T> = Flat<
  { -readonly [K in KeysWhere<T, GatewayModelGroupFacts> as CamelCase<K>]: T[K] extends GatewayModelGroupFacts ? CreateOf<T[K]['fields']> : never }
  & { -readonly [K in KeysWhere<T, { create: 'required' | 'defaulted' }> as CamelCase<K>]: ValueOf<T[K]> }
  & { -readonly [K in KeysWhere<T, { create: 'optional' }> as CamelCase<K>]?: ValueOf<T[K]> }>;
/** Changes of a field table: every updatable field (and group) optional; a removable one may be null. */
type UpdateOf<T> = Flat<
  { -readonly [K in KeysWhere<T, GatewayModelGroupFacts> as CamelCase<K>]?: T[K] extends GatewayModelGroupFacts ? UpdateOf<T[K]['fields']> : never }
  & { -readonly [K in KeysWhere<T, { update: true }> as CamelCase<K>]?: ValueOf<T[K]> }
  & { -readonly [K in KeysWhere<T, { update: 'removable' }> as CamelCase<K>]?: ValueOf<T[K]> | null }>;

/** A customer-facing model name with its prices (µ₹ per million tokens) and (concealed) upstream target. */
export type GatewayModel = RecordOf<GatewayModelFields>;
/** A new gateway model as a create gives it (money as bigint µ₹ per million tokens), defaults applied. */
export type CreateGatewayModelInput = CreateOf<GatewayModelFields>;
/** Changes to a gateway model; absent fields stay. */
export type UpdateGatewayModelInput = UpdateOf<GatewayModelFields>;

/** One stored or shown leaf of the record: where it sits in the domain record and in SQL. */
export interface GatewayModelLeaf {
  /** Its name in the API and the audit log, e.g. `display_name` or `upstream.base_url`. */
  wireName: string;
  /** The domain record's key of its group (`upstream`), if any. */
  groupKey: string | undefined;
  /** Its key in the domain record (or group), e.g. `displayName`. */
  key: string;
  /** Its SQL column, or null when it is not stored as is. */
  column: string | null;
  /** The SQL type its parameters are cast to. */
  sqlType: GatewayModelSqlType;
  /** Whether a response shows it (the domain record holds it). */
  shown: boolean;
  /** Whether a create may give it. */
  creatable: boolean;
  /** Whether an update may change it. */
  updatable: boolean;
  /** Whether its value may be null (a meaning of its own, e.g. reasoning priced as output), so an update can set null. */
  nullable: boolean;
}

const isGroup = (facts: GatewayModelFieldFacts | GatewayModelGroupFacts): facts is GatewayModelGroupFacts => 'fields' in facts;

/** Every leaf of the record, in declaration order: what the store, the view and the audit log walk. */
export const gatewayModelLeaves: readonly GatewayModelLeaf[] = Object.entries(gatewayModelFields as Readonly<Record<string, GatewayModelFieldFacts | GatewayModelGroupFacts>>)
  .flatMap(([name, facts]) => {
    const leaf = (fieldName: string, field: GatewayModelFieldFacts, group: { name: string; columnPrefix: string } | undefined): GatewayModelLeaf => ({
      wireName: group === undefined ? fieldName : `${group.name}.${fieldName}`,
      groupKey: group === undefined ? undefined : camelCase(group.name),
      key: camelCase(fieldName),
      column: field.column === undefined ? `${group?.columnPrefix ?? ''}${fieldName}` : field.column,
      sqlType: field.sqlType,
      shown: field.shown !== false,
      creatable: field.create !== undefined,
      updatable: field.update !== undefined,
      nullable: field.nullable === true,
    });
    if (!isGroup(facts)) return [leaf(name, facts, undefined)];
    return Object.entries(facts.fields).map(([fieldName, field]) => leaf(fieldName, field, { name, columnPrefix: facts.columnPrefix }));
  });

/** The input classes whose prices default to the input price (cost) on create, by domain key: [customer price, provider cost]. */
export const inputClassPriceKeys = tokenClassPrices.filter((entry) => entry.fallback === 'input')
  .map(({ stem }) => [camelCase(`${stem}_price_micros_per_mtok`), camelCase(`provider_${stem}_cost_micros_per_mtok`)] as const);

/** A leaf's value in a domain-shaped object (the record, a create input, or changes). */
export function leafValue(object: object, leaf: GatewayModelLeaf): unknown {
  const holder = leaf.groupKey === undefined ? object : (object as Record<string, unknown>)[leaf.groupKey];
  return holder === undefined || holder === null ? undefined : (holder as Record<string, unknown>)[leaf.key];
}
