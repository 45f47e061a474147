import { z } from 'zod';
import { apiVersionQueryProviderKind, providerKinds } from './provider-kinds.ts';
import { upstreamUrlProblem, type UpstreamUrlPolicy } from './upstream-url.ts';
import { displayText, integerIn, moneyMicros, moneyShown, timestampShown } from '../../common/domain/wire-fields.ts';
import { camelCase, type CamelKeys } from './camel-case.ts';

/**
 * The Gateway Model record, declared once: every field with its domain value, how a response
 * shows it, how a create and an update may set it, and its SQL column. The request and response
 * schemas (and so the OpenAPI document), the domain record type, the JSON view, the store's row
 * mapping and SQL, and the audit entries are all derived from `gatewayModelFields` below, so a
 * new field is one entry here plus its SQL column (migration) — and, if proxies need it, the
 * config stream's message (a wire contract of its own, config-stream/config-update.ts).
 */

/** The slug rule of a gateway model (also enforced by a CHECK constraint). */
export const gatewayModelSlugPattern = /^[a-z0-9][a-z0-9._:/-]{0,127}$/;

/** The largest price or cost per million tokens, µ₹ (₹1,000,000,000 per million tokens). */
const maxPriceMicrosPerMtok = 1_000_000_000_000_000n;

/** A gateway model slug as a request gives it, e.g. `acme-chat` or `openai/gpt-4o-mini`. */
export const gatewayModelSlug = z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
  .regex(gatewayModelSlugPattern, { error: 'must be 1 to 128 characters of a-z, 0-9 and . _ : / -, starting with a letter or digit' })
  .meta({ description: 'Customer-facing model name.', examples: ['acme-chat'] });

/** The SSRF policy that judges only a base URL's form: http and internal addresses let through. */
const formOnly: UpstreamUrlPolicy = { allowPrivate: true };

/**
 * An upstream base URL. Its form alone is judged here (an `?api-version=…` query, http and
 * internal addresses are let through): the SSRF address rule depends on the model's
 * upstream.allow_private_network, and whether its provider kind may carry that query on the
 * kind, so both are judged where those are known (the request schemas' upstream objects, with
 * ADMIN_ALLOW_PRIVATE_UPSTREAMS; for a PATCH without the flag, the gateway models service).
 */
function upstreamBaseUrl() {
  return z.string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .max(2048, { error: 'must be at most 2048 characters' })
    .superRefine((value, context) => {
      const problem = upstreamUrlProblem(value, formOnly, { providerKind: apiVersionQueryProviderKind });
      if (problem) context.addIssue({ code: 'custom', message: problem });
    })
    .meta({
      description: 'https URL of the provider\'s API, e.g. https://api.openai.com/v1 or https://api.anthropic.com/v1 (see docs/admin-api.md for each kind). '
        + 'No credentials, query or fragment, except azure_openai\'s ?api-version=YYYY-MM-DD[-preview]. http, private, loopback and other internal addresses, and host names that resolve to one, '
        + 'are refused (SSRF) unless the model has upstream.allow_private_network true (or the admin runs with ADMIN_ALLOW_PRIVATE_UPSTREAMS=true).',
    });
}

/** A gateway model's explicit SSRF exception as a request sets it (see docs/admin-api.md "Upstream base URLs"). */
const upstreamAllowPrivateNetwork = z.boolean({ error: 'must be true or false' })
  .meta({
    description: 'true: the explicit, audited SSRF exception for this model: its base_url may use http and a private, loopback or otherwise internal address '
      + '(a self-hosted vLLM or ollama on a private network), and proxies skip their connect-time address check for it. Turning it off is refused while base_url needs it.',
  });

/** The upstream provider kind as a request gives it. */
const providerKindGiven = z.enum(providerKinds, { error: `must be one of ${providerKinds.map((kind) => `"${kind}"`).join(', ')}` })
  .meta({ description: 'How the proxy talks to the upstream: openai_compatible (any OpenAI-compatible server), openai, azure_openai, vllm, ollama, groq, together, or anthropic (Messages API).' });

/** A provider credential: no whitespace, at most 4096 characters. */
const upstreamApiKey = z.string({ error: 'must be a string' })
  .min(1, { error: 'must not be empty' })
  .max(4096, { error: 'must be at most 4096 characters' })
  .regex(/^\S+$/, { error: 'must not contain whitespace' });

/** What a gateway model serves: chat (chat completions, Responses, Messages) or embeddings. */
const gatewayModelKinds = ['chat', 'embedding'] as const;

/** The kinds of input a chat model's upstream accepts besides text. */
const gatewayModelInputModalities = ['text', 'image', 'audio'] as const;

/** A gateway model's kind as a request gives it. */
const kindGiven = z.enum(gatewayModelKinds, { error: 'must be "chat" or "embedding"' })
  .meta({ description: 'chat: served on /v1/chat/completions, /v1/responses and /v1/messages. embedding: served on /v1/embeddings only (priced by input tokens; no output price). Default "chat".' });

/** The input modalities a request gives: a set that always includes text. */
const inputModalitiesGiven = z.array(z.enum(gatewayModelInputModalities, { error: 'must be "text", "image" or "audio"' }), { error: 'must be an array' })
  .min(1, { error: 'must not be empty' })
  .max(gatewayModelInputModalities.length, { error: 'must not repeat a modality' })
  .refine((modalities) => new Set(modalities).size === modalities.length, { error: 'must not repeat a modality' })
  .refine((modalities) => modalities.includes('text'), { error: 'must include "text"' })
  .meta({ description: 'What the upstream accepts in a message: "text" always; "image" lets requests carry image_url parts, "audio" input_audio parts (refused with a 400 otherwise). Default ["text"].' });

/** Effort levels a model's upstream may take: OpenAI's reasoning_effort values and Anthropic's output_config.effort values. */
const reasoningEffortValues = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'] as const;
/** Anthropic thinking modes a model's upstream may take ("disabled" is always accepted). */
const thinkingModeValues = ['enabled', 'adaptive'] as const;

/** A set of distinct values of `values`, as a request gives it. */
function distinctSet<const V extends readonly [string, ...string[]]>(values: V, description: string) {
  return z.array(z.enum(values, { error: `must be one of ${values.map((value) => `"${value}"`).join(', ')}` }), { error: 'must be an array' })
    .max(values.length, { error: 'must not repeat a value' })
    .refine((given) => new Set(given).size === given.length, { error: 'must not repeat a value' })
    .meta({ description });
}

const reasoningEffortsGiven = distinctSet(reasoningEffortValues, 'Effort levels the upstream takes: sent as reasoning_effort to an OpenAI-compatible upstream '
  + '(none, minimal, low, medium, high, xhigh) or as output_config.effort to an anthropic one (low, medium, high, max). A request with another effort is a 400. Default [] (none).');
const thinkingModesGiven = distinctSet(thinkingModeValues, 'anthropic upstreams only: the thinking modes the upstream takes, "enabled" (thinking.budget_tokens) and "adaptive". Default [] (no extended thinking).');
const returnsReasoningGiven = z.boolean({ error: 'must be true or false' })
  .meta({ description: 'true: the upstream returns its reasoning (reasoning_content, or thinking blocks), which clients then receive in their surface\'s shape. Default false.' });

/** A price or cost per million tokens as a request gives it, µ₹. */
const price = (description: string) => moneyMicros({ min: 0n, max: maxPriceMicrosPerMtok }, `${description} Per million tokens.`);

/**
 * The token price classes of a price sheet, each with a customer price and a provider
 * cost: wire name stem, what it prices, and what it is when a create leaves it out. The input
 * classes are parts of the prompt and default to the input price (cost); reasoning is part of
 * the output and, when null, is priced as output (so it follows a later change of the output price).
 */
const tokenClassPrices = [
  { stem: 'cached_input', what: 'input tokens read from the upstream\'s prompt cache', fallback: 'input' },
  { stem: 'cache_write_5m', what: 'input tokens written to the prompt cache for 5 minutes', fallback: 'input' },
  { stem: 'cache_write_1h', what: 'input tokens written to the prompt cache for 1 hour', fallback: 'input' },
  { stem: 'reasoning', what: 'output tokens the model spends reasoning', fallback: 'output' },
  { stem: 'audio_input', what: 'audio input tokens', fallback: 'input' },
  { stem: 'image_input', what: 'image input tokens, where the upstream reports them apart', fallback: 'input' },
] as const;

/** The price sheet fields of every token class, customer prices first then provider costs (the record's order). */
function tokenClassPriceFields() {
  const customer: Record<string, FieldSpec> = {};
  const provider: Record<string, FieldSpec> = {};
  for (const { stem, what, fallback } of tokenClassPrices) {
    if (fallback === 'output') {
      const rule = (of: string) => price(`${of} of ${what}, or null: priced as output (follows the output ${of === 'Customer price' ? 'price' : 'cost'}). Default null.`).nullable();
      customer[`${stem}_price_micros_per_mtok`] = {
        record: z.bigint().nullable(), shown: `Customer price of ${what} per million; null: as output.`,
        create: rule('Customer price').optional().transform((value) => value ?? null), update: rule('Customer price').optional(),
      };
      provider[`provider_${stem}_cost_micros_per_mtok`] = {
        record: z.bigint().nullable(), shown: `Provider cost of ${what} per million; null: as output.`,
        create: rule('Provider cost').optional().transform((value) => value ?? null), update: rule('Provider cost').optional(),
      };
    } else {
      customer[`${stem}_price_micros_per_mtok`] = {
        record: z.bigint(), shown: `Customer price of ${what} per million.`,
        create: price(`Customer price of ${what}. Default: input_price_micros_per_mtok.`).optional(),
        update: price(`Customer price of ${what}.`).optional(),
      };
      provider[`provider_${stem}_cost_micros_per_mtok`] = {
        record: z.bigint(), shown: `Provider cost of ${what} per million.`,
        create: price(`What the provider charges for ${what} (recorded, never billed). Default: provider_input_cost_micros_per_mtok.`).optional(),
        update: price(`What the provider charges for ${what} (recorded, never billed).`).optional(),
      };
    }
  }
  return { ...customer, ...provider } as TokenClassPriceFields;
}

/** An input class's price field: a bigint, optional on create (defaulted from the input price). */
interface InputClassPriceSpec { record: z.ZodBigInt; shown: string; create: z.ZodOptional<ReturnType<typeof price>>; update: z.ZodOptional<ReturnType<typeof price>> }
/** The reasoning price field: bigint or null (as output). */
interface OutputClassPriceSpec {
  record: z.ZodNullable<z.ZodBigInt>; shown: string;
  create: z.ZodPipe<z.ZodOptional<z.ZodNullable<ReturnType<typeof price>>>, z.ZodTransform<bigint | null, bigint | null | undefined>>;
  update: z.ZodOptional<z.ZodNullable<ReturnType<typeof price>>>;
}
type TokenClassStem = (typeof tokenClassPrices)[number]['stem'];
type InputClassStem = Exclude<TokenClassStem, 'reasoning'>;
/** The static shape of tokenClassPriceFields(): what the record's types are derived from. */
type TokenClassPriceFields = { [S in InputClassStem as `${S}_price_micros_per_mtok`]: InputClassPriceSpec }
  & { reasoning_price_micros_per_mtok: OutputClassPriceSpec }
  & { [S in InputClassStem as `provider_${S}_cost_micros_per_mtok`]: InputClassPriceSpec }
  & { provider_reasoning_cost_micros_per_mtok: OutputClassPriceSpec };

/** The input classes whose prices default to the input price (cost) on create, by domain key: [customer price, provider cost]. */
export const inputClassPriceKeys = tokenClassPrices.filter((entry) => entry.fallback === 'input')
  .map(({ stem }) => [camelCase(`${stem}_price_micros_per_mtok`), camelCase(`provider_${stem}_cost_micros_per_mtok`)] as const);

/** One field of the record. Money is µ₹ (bigint), prices per million tokens. */
interface FieldSpec {
  /** The value the domain record holds (absent: a write-only field, never returned). bigint: money; Date: an instant. */
  readonly record?: z.ZodType;
  /** The description a response gives the field (money and flags; plain fields have none). */
  readonly shown?: string;
  /** Its rule and description on create (absent: not given on create). */
  readonly create?: z.ZodType;
  /** Its rule on update; absent: the create rule, optional; null: it cannot change. */
  readonly update?: z.ZodType | null;
  /** Its SQL column; absent: the group's column prefix and the field's name; null: not stored as is. */
  readonly column?: string | null;
}

/** A nested object of the record (the upstream target). */
interface GroupSpec {
  readonly fields: Readonly<Record<string, FieldSpec>>;
  /** Prefix of its fields' SQL columns. */
  readonly columnPrefix: string;
  /** How a create body names a missing or malformed group. */
  readonly createError: z.core.$ZodErrorMap;
  /** How an update body names a malformed group. */
  readonly updateError: string;
}

/** Every field of the Gateway Model record, in the order requests, responses and the OpenAPI document list them. */
const gatewayModelFields = {
  slug: { record: z.string(), create: gatewayModelSlug, update: null },
  display_name: {
    record: z.string(),
    create: displayText('Shown to customers; defaults to the slug. 1..200 characters.').optional(),
    update: displayText('Shown to customers. 1..200 characters.').optional(),
  },
  kind: { record: z.enum(gatewayModelKinds), create: kindGiven.default('chat'), update: null },
  input_modalities: {
    record: z.array(z.enum(gatewayModelInputModalities)),
    shown: 'What requests may carry besides text: image (image_url parts) and audio (input_audio parts).',
    create: inputModalitiesGiven.default(['text']),
    update: inputModalitiesGiven.optional(),
  },
  reasoning_efforts: {
    record: z.array(z.enum(reasoningEffortValues)),
    shown: 'Effort levels the upstream takes (reasoning_effort, or output_config.effort for anthropic).',
    create: reasoningEffortsGiven.default([]),
    update: reasoningEffortsGiven.optional(),
  },
  thinking_modes: {
    record: z.array(z.enum(thinkingModeValues)),
    shown: 'Anthropic thinking modes the upstream takes: enabled (with budget_tokens), adaptive.',
    create: thinkingModesGiven.default([]),
    update: thinkingModesGiven.optional(),
  },
  max_thinking_budget_tokens: {
    record: z.int(),
    create: integerIn(0, 10_000_000, 'Largest thinking.budget_tokens a request may give (it also stays below max_tokens); 0: bounded by max_tokens only. Default 0.').default(0),
    update: integerIn(0, 10_000_000, 'Largest thinking.budget_tokens a request may give; 0: bounded by max_tokens only.').optional(),
  },
  returns_reasoning: {
    record: z.boolean(),
    shown: 'true: the upstream returns its reasoning, and clients receive it.',
    create: returnsReasoningGiven.default(false),
    update: returnsReasoningGiven.optional(),
  },
  default_max_tokens: { record: z.int(), create: integerIn(1, 1_000_000, 'max_tokens used to size the Reserve when a request gives none.') },
  max_context_tokens: {
    record: z.int(), create: integerIn(1, 10_000_000, 'Largest prompt + completion the upstream accepts, tokens; at least default_max_tokens.'),
  },
  input_price_micros_per_mtok: { record: z.bigint(), shown: 'Customer price of input tokens per million.', create: price('Customer price of input tokens.') },
  output_price_micros_per_mtok: { record: z.bigint(), shown: 'Customer price of output tokens per million.', create: price('Customer price of output tokens.') },
  provider_input_cost_micros_per_mtok: {
    record: z.bigint(), shown: 'Provider cost of input tokens per million.',
    // Omitted on create: 0 (a model whose provider cost is unknown or free).
    create: price('What the provider charges for input tokens (recorded, never billed). Default "0".').optional().transform((value) => value ?? 0n),
    update: price('What the provider charges for input tokens (recorded, never billed).').optional(),
  },
  provider_output_cost_micros_per_mtok: {
    record: z.bigint(), shown: 'Provider cost of output tokens per million.',
    create: price('What the provider charges for output tokens (recorded, never billed). Default "0".').optional().transform((value) => value ?? 0n),
    update: price('What the provider charges for output tokens (recorded, never billed).').optional(),
  },
  ...tokenClassPriceFields(),
  upstream: {
    columnPrefix: 'upstream_',
    createError: (issue) => (issue.input === undefined ? 'is required' : 'must be a JSON object'),
    updateError: 'must be a JSON object',
    fields: {
      provider_kind: { record: z.enum(providerKinds), create: providerKindGiven, update: null, column: 'provider_kind' },
      base_url: { record: z.string(), create: upstreamBaseUrl() },
      model: { record: z.string(), create: displayText("The provider's model name; never shown to customers.") },
      // Sealed before it is stored (gateway-model-store.ts keeps its column), never returned.
      api_key: {
        create: upstreamApiKey.optional()
          .meta({ description: 'The provider credential. Stored encrypted (AES-256-GCM); never returned.', writeOnly: true }),
        update: upstreamApiKey.nullable().optional()
          .meta({ description: 'A new provider credential (stored encrypted, never returned), or null to remove it.', writeOnly: true }),
        column: null,
      },
      // Whether the sealed credential column is set: derived by the store, never written.
      has_api_key: { record: z.boolean(), column: null },
      allow_private_network: {
        record: z.boolean(),
        shown: 'true: the model\'s explicit SSRF exception: its base_url may use http and a private or loopback address, and proxies skip their connect-time address check for it.',
        create: upstreamAllowPrivateNetwork.default(false),
        update: upstreamAllowPrivateNetwork.optional(),
      },
    },
  },
  created_at: { record: z.date() },
} satisfies Readonly<Record<string, FieldSpec | GroupSpec>>;

type Fields = typeof gatewayModelFields;
type Strict<Shape extends z.core.$ZodShape> = z.ZodObject<Shape, z.core.$strict>;

type CreateFace<S> = S extends GroupSpec ? Strict<CreateShape<S['fields']>> : S extends { create: infer C extends z.ZodType } ? C : never;
type UpdateFace<S> = S extends GroupSpec ? Strict<UpdateShape<S['fields']>>
  : S extends { update: null } ? never
    : S extends { update: infer U extends z.ZodType } ? U
      : S extends { create: infer C extends z.ZodType } ? z.ZodOptional<C> : never;
type RecordFace<S> = S extends GroupSpec ? Strict<RecordShape<S['fields']>> : S extends { record: infer R extends z.ZodType } ? R : never;
type ShownFace<S> = S extends GroupSpec ? Strict<ShownShape<S['fields']>>
  : S extends { record: infer R extends z.ZodType } ? (R extends z.ZodBigInt ? ReturnType<typeof moneyShown>
    : R extends z.ZodNullable<z.ZodBigInt> ? z.ZodNullable<ReturnType<typeof moneyShown>>
      : R extends z.ZodDate ? typeof timestampShown : R)
    : never;
/** The fields of `F` that have a face, each as that face. */
type CreateShape<F> = { -readonly [K in keyof F as [CreateFace<F[K]>] extends [never] ? never : K]: CreateFace<F[K]> };
type UpdateShape<F> = { -readonly [K in keyof F as [UpdateFace<F[K]>] extends [never] ? never : K]: UpdateFace<F[K]> };
type RecordShape<F> = { -readonly [K in keyof F as [RecordFace<F[K]>] extends [never] ? never : K]: RecordFace<F[K]> };
type ShownShape<F> = { -readonly [K in keyof F as [ShownFace<F[K]>] extends [never] ? never : K]: ShownFace<F[K]> };

const isGroup = (spec: FieldSpec | GroupSpec): spec is GroupSpec => 'fields' in spec;

/** Builds one face of every field that has it, in declaration order (groups as strict objects). */
function shapeOf(face: 'create' | 'update' | 'record' | 'shown'): Record<string, z.ZodType> {
  const faceOf = (spec: FieldSpec): z.ZodType | undefined => {
    if (face === 'create') return spec.create;
    if (face === 'update') return spec.update === null ? undefined : spec.update ?? spec.create?.optional();
    if (face === 'record' || spec.record === undefined) return spec.record;
    if (spec.record instanceof z.ZodBigInt) return moneyShown(spec.shown ?? '');
    if (spec.record instanceof z.ZodNullable && spec.record.unwrap() instanceof z.ZodBigInt) return moneyShown(spec.shown ?? '').nullable();
    if (spec.record instanceof z.ZodDate) return timestampShown;
    return spec.shown === undefined ? spec.record : spec.record.meta({ description: spec.shown });
  };
  const shape: Record<string, z.ZodType> = {};
  for (const [name, spec] of Object.entries(gatewayModelFields as Readonly<Record<string, FieldSpec | GroupSpec>>)) {
    if (isGroup(spec)) {
      const inner: Record<string, z.ZodType> = {};
      for (const [innerName, innerSpec] of Object.entries(spec.fields)) {
        const schema = faceOf(innerSpec);
        if (schema !== undefined) inner[innerName] = schema;
      }
      const error = face === 'create' ? { error: spec.createError } : face === 'update' ? { error: spec.updateError } : {};
      shape[name] = z.strictObject(inner, error);
    } else {
      const schema = faceOf(spec);
      if (schema !== undefined) shape[name] = schema;
    }
  }
  return shape;
}

/** The fields a create body may give, with their rules (catalog/http/catalog-schemas.ts adds the rules across fields). */
export const gatewayModelCreateShape = shapeOf('create') as CreateShape<Fields>;
/** The fields an update body may give, each optional (catalog/http/catalog-schemas.ts adds the rules across fields). */
export const gatewayModelUpdateShape = shapeOf('update') as UpdateShape<Fields>;
/** The record as a response shows it: money as decimal strings, instants as ISO-8601, no credential. */
export const gatewayModelShown = z.strictObject(shapeOf('shown') as ShownShape<Fields>);
/** The record as the domain holds it: money as bigint µ₹ (prices per million tokens), instants as Date (a type only: nothing parses it). */
type GatewayModelRecord = ReturnType<typeof z.strictObject<RecordShape<Fields>>>;

/** A customer-facing model name with its prices (µ₹ per million tokens) and (concealed) upstream target. */
export type GatewayModel = CamelKeys<z.output<GatewayModelRecord>>;
/** A new gateway model as a create body gives it, parsed (money as bigint µ₹ per million tokens). */
export type CreateGatewayModelInput = CamelKeys<z.output<Strict<CreateShape<Fields>>>>;
/** An update shape with its groups optional, as the update body has them (a body may leave `upstream` out). */
type OptionalGroups<Shape> = { [K in keyof Shape]: Shape[K] extends z.ZodObject ? z.ZodOptional<Shape[K]> : Shape[K] };
/** Changes to a gateway model as an update body gives them, parsed; absent fields stay. */
export type UpdateGatewayModelInput = CamelKeys<z.output<Strict<OptionalGroups<UpdateShape<Fields>>>>>;
/** A gateway model as a response shows it (snake_case JSON). */
export type GatewayModelJson = z.output<typeof gatewayModelShown>;

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
  sqlType: 'text' | 'text[]' | 'integer' | 'bigint' | 'boolean' | 'timestamptz';
  /** Whether a response shows it (the domain record holds it). */
  shown: boolean;
  /** Whether a create may give it. */
  creatable: boolean;
  /** Whether an update may change it. */
  updatable: boolean;
  /** Whether its value may be null (a meaning of its own, e.g. reasoning priced as output), so an update can set null. */
  nullable: boolean;
}

/** The SQL type of a domain value: what a parameter of its column is cast to. */
function sqlTypeOf(given: z.ZodType | undefined): GatewayModelLeaf['sqlType'] {
  // A nullable value is stored in the column of what it wraps (NULL: its meaning is the field's own).
  const record = given instanceof z.ZodNullable ? given.unwrap() as z.ZodType : given;
  if (record instanceof z.ZodBigInt) return 'bigint';
  if (record instanceof z.ZodNumber) return 'integer';
  if (record instanceof z.ZodBoolean) return 'boolean';
  if (record instanceof z.ZodDate) return 'timestamptz';
  if (record instanceof z.ZodArray) return 'text[]';
  return 'text';
}

/** Every leaf of the record, in declaration order: what the store, the view and the audit log walk. */
export const gatewayModelLeaves: readonly GatewayModelLeaf[] = Object.entries(gatewayModelFields as Readonly<Record<string, FieldSpec | GroupSpec>>)
  .flatMap(([name, spec]) => {
    const leaf = (fieldName: string, field: FieldSpec, group: { name: string; columnPrefix: string } | undefined): GatewayModelLeaf => ({
      wireName: group === undefined ? fieldName : `${group.name}.${fieldName}`,
      groupKey: group === undefined ? undefined : camelCase(group.name),
      key: camelCase(fieldName),
      column: field.column === undefined ? `${group?.columnPrefix ?? ''}${fieldName}` : field.column,
      sqlType: sqlTypeOf(field.record),
      shown: field.record !== undefined,
      creatable: field.create !== undefined,
      updatable: field.update !== null && (field.update !== undefined || field.create !== undefined),
      nullable: field.record instanceof z.ZodNullable,
    });
    if (!isGroup(spec)) return [leaf(name, spec, undefined)];
    return Object.entries(spec.fields).map(([fieldName, field]) => leaf(fieldName, field, { name, columnPrefix: spec.columnPrefix }));
  });

/** A leaf's value in a domain-shaped object (the record, a create input, or changes). */
export function leafValue(object: object, leaf: GatewayModelLeaf): unknown {
  const holder = leaf.groupKey === undefined ? object : (object as Record<string, unknown>)[leaf.groupKey];
  return holder === undefined || holder === null ? undefined : (holder as Record<string, unknown>)[leaf.key];
}

/** A domain value as JSON shows it: money (bigint) as a decimal string, an instant as ISO-8601. */
function shownValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  return value;
}

/**
 * The JSON of a gateway model: exactly the fields a response shows, in the record's order
 * (anything else the object carries, such as a sealed credential, is never copied).
 */
export function gatewayModelToJson(model: GatewayModel): GatewayModelJson {
  const json: Record<string, unknown> = {};
  for (const leaf of gatewayModelLeaves) {
    if (!leaf.shown) continue;
    const [group, field] = leaf.wireName.includes('.') ? leaf.wireName.split('.') as [string, string] : [undefined, leaf.wireName];
    if (group === undefined) json[field] = shownValue(leafValue(model, leaf));
    else ((json[group] ??= {}) as Record<string, unknown>)[field] = shownValue(leafValue(model, leaf));
  }
  return json as GatewayModelJson;
}
