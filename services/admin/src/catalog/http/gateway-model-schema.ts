import { z } from 'zod';
import { apiVersionQueryProviderKind, providerKinds } from '../domain/provider-kinds.ts';
import { upstreamUrlProblem, type UpstreamUrlPolicy } from '../domain/upstream-url.ts';
import { displayText, integerIn, moneyMicros, moneyShown, timestampShown } from '../../common/http/wire-fields.ts';
import type { CamelKeys } from '../domain/camel-case.ts';
import {
  gatewayModelFields, gatewayModelInputModalities, gatewayModelKinds, gatewayModelSlugPattern, maxPriceMicrosPerMtok,
  reasoningEffortValues, thinkingModeValues, tokenClassPrices,
  type CreateGatewayModelInput, type GatewayModel, type GatewayModelFieldFacts, type GatewayModelFields, type GatewayModelGroupFacts,
  type UpdateGatewayModelInput,
} from '../domain/gateway-model-fields.ts';

/**
 * The Gateway Model record on the wire: every field's request rules, messages and descriptions,
 * keyed by its name in the API. The fields themselves (which exist, their types and columns, and
 * which a create or update may give) are the domain's table (catalog/domain/gateway-model-fields.ts);
 * the compiler checks that the keys here are exactly its fields and that the bodies these rules
 * parse are its create and update inputs. The request and response schemas (and so the OpenAPI
 * document) are derived from both.
 */

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

/** Where an upstream stands among the model's deployments (docs/admin-api.md "Upstream deployments"). */
export const deploymentPriority = integerIn(0, 100, 'Lower is tried first: a higher priority is tried only when every deployment of a lower one failed for the request or is ejected. 0..100, default 0.');
/** An upstream's share of the requests within its priority. */
export const deploymentWeight = integerIn(1, 1000, 'Share of the requests within its priority (weighted choice among the deployments of one priority). 1..1000, default 1.');

/** The upstream provider kind as a request gives it. */
const providerKindGiven = z.enum(providerKinds, { error: `must be one of ${providerKinds.map((kind) => `"${kind}"`).join(', ')}` })
  .meta({ description: 'How the proxy talks to the upstream: openai_compatible (any OpenAI-compatible server), openai, azure_openai, vllm, ollama, groq, together, or anthropic (Messages API).' });

/** A provider credential: no whitespace, at most 4096 characters. */
const upstreamApiKey = z.string({ error: 'must be a string' })
  .min(1, { error: 'must not be empty' })
  .max(4096, { error: 'must be at most 4096 characters' })
  .regex(/^\S+$/, { error: 'must not contain whitespace' });

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

/** What each token class prices, as the price sheet's descriptions name it. */
const tokenClassWhat: Readonly<Record<(typeof tokenClassPrices)[number]['stem'], string>> = {
  cached_input: 'input tokens read from the upstream\'s prompt cache',
  cache_write_5m: 'input tokens written to the prompt cache for 5 minutes',
  cache_write_1h: 'input tokens written to the prompt cache for 1 hour',
  reasoning: 'output tokens the model spends reasoning',
  audio_input: 'audio input tokens',
  image_input: 'image input tokens, where the upstream reports them apart',
};

/** The rules of every token class price field, customer prices first then provider costs (the record's order). */
function tokenClassPriceRules() {
  const customer: Record<string, WireField> = {};
  const provider: Record<string, WireField> = {};
  for (const { stem, fallback } of tokenClassPrices) {
    const what = tokenClassWhat[stem];
    if (fallback === 'output') {
      const rule = (of: string) => price(`${of} of ${what}, or null: priced as output (follows the output ${of === 'Customer price' ? 'price' : 'cost'}). Default null.`).nullable();
      customer[`${stem}_price_micros_per_mtok`] = {
        shown: `Customer price of ${what} per million; null: as output.`,
        create: rule('Customer price').optional().transform((value) => value ?? null), update: rule('Customer price').optional(),
      };
      provider[`provider_${stem}_cost_micros_per_mtok`] = {
        shown: `Provider cost of ${what} per million; null: as output.`,
        create: rule('Provider cost').optional().transform((value) => value ?? null), update: rule('Provider cost').optional(),
      };
    } else {
      customer[`${stem}_price_micros_per_mtok`] = {
        shown: `Customer price of ${what} per million.`,
        create: price(`Customer price of ${what}. Default: input_price_micros_per_mtok.`).optional(),
        update: price(`Customer price of ${what}.`).optional(),
      };
      provider[`provider_${stem}_cost_micros_per_mtok`] = {
        shown: `Provider cost of ${what} per million.`,
        create: price(`What the provider charges for ${what} (recorded, never billed). Default: provider_input_cost_micros_per_mtok.`).optional(),
        update: price(`What the provider charges for ${what} (recorded, never billed).`).optional(),
      };
    }
  }
  return { ...customer, ...provider } as TokenClassPriceRules;
}

/** An input class's price rules: optional on create (defaulted from the input price by the service). */
interface InputClassPriceRules { shown: string; create: z.ZodOptional<ReturnType<typeof price>>; update: z.ZodOptional<ReturnType<typeof price>> }
/** The reasoning price rules: bigint or null (as output). */
interface OutputClassPriceRules {
  shown: string;
  create: z.ZodPipe<z.ZodOptional<z.ZodNullable<ReturnType<typeof price>>>, z.ZodTransform<bigint | null, bigint | null | undefined>>;
  update: z.ZodOptional<z.ZodNullable<ReturnType<typeof price>>>;
}
type InputClassStem = Exclude<(typeof tokenClassPrices)[number]['stem'], 'reasoning'>;
/** The static shape of tokenClassPriceRules(): what the parsed types are derived from. */
type TokenClassPriceRules = { [S in InputClassStem as `${S}_price_micros_per_mtok`]: InputClassPriceRules }
  & { reasoning_price_micros_per_mtok: OutputClassPriceRules }
  & { [S in InputClassStem as `provider_${S}_cost_micros_per_mtok`]: InputClassPriceRules }
  & { provider_reasoning_cost_micros_per_mtok: OutputClassPriceRules };

/** One field's wire rules. */
interface WireField {
  /** The description a response gives the field (money and flags; plain fields have none). */
  readonly shown?: string;
  /** Its rule and description on create (absent: not given on create). */
  readonly create?: z.ZodType;
  /** Its rule on update; absent: the create rule, optional; null: it cannot change. */
  readonly update?: z.ZodType | null;
}

/** A group's wire rules: its fields' and how a body names a missing or malformed group. */
interface WireGroup {
  readonly fields: Readonly<Record<string, WireField>>;
  /** How a create body names a missing or malformed group. */
  readonly createError: z.core.$ZodErrorMap;
  /** How an update body names a malformed group. */
  readonly updateError: string;
}

/** The wire rules a domain field must have: a create rule iff a create may give it, `update: null` iff only a create may. */
type WireFieldOf<F> = (F extends { create: string } ? { readonly create: z.ZodType } : { readonly create?: never })
  & (F extends { update: string | true } ? { readonly update?: z.ZodType } : F extends { create: string } ? { readonly update: null } : { readonly update?: never })
  & (F extends { shown: false } ? { readonly shown?: never } : { readonly shown?: string });
/** Wire rules keyed by exactly the domain table's fields (a missing or extra key does not compile). */
type WireFields<T> = { readonly [K in keyof T]: T[K] extends GatewayModelGroupFacts
  ? { readonly fields: WireFields<T[K]['fields']>; readonly createError: z.core.$ZodErrorMap; readonly updateError: string }
  : WireFieldOf<T[K]> };

/** Every field's wire rules, in the order of the domain's table. */
const gatewayModelWireFields = {
  slug: { create: gatewayModelSlug, update: null },
  display_name: {
    create: displayText('Shown to customers; defaults to the slug. 1..200 characters.').optional(),
    update: displayText('Shown to customers. 1..200 characters.').optional(),
  },
  kind: { create: kindGiven.default('chat'), update: null },
  input_modalities: {
    shown: 'What requests may carry besides text: image (image_url parts) and audio (input_audio parts).',
    create: inputModalitiesGiven.default(['text']),
    update: inputModalitiesGiven.optional(),
  },
  reasoning_efforts: {
    shown: 'Effort levels the upstream takes (reasoning_effort, or output_config.effort for anthropic).',
    create: reasoningEffortsGiven.default([]),
    update: reasoningEffortsGiven.optional(),
  },
  thinking_modes: {
    shown: 'Anthropic thinking modes the upstream takes: enabled (with budget_tokens), adaptive.',
    create: thinkingModesGiven.default([]),
    update: thinkingModesGiven.optional(),
  },
  max_thinking_budget_tokens: {
    create: integerIn(0, 10_000_000, 'Largest thinking.budget_tokens a request may give (it also stays below max_tokens); 0: bounded by max_tokens only. Default 0.').default(0),
    update: integerIn(0, 10_000_000, 'Largest thinking.budget_tokens a request may give; 0: bounded by max_tokens only.').optional(),
  },
  returns_reasoning: {
    shown: 'true: the upstream returns its reasoning, and clients receive it.',
    create: returnsReasoningGiven.default(false),
    update: returnsReasoningGiven.optional(),
  },
  default_max_tokens: { create: integerIn(1, 1_000_000, 'max_tokens used to size the Reserve when a request gives none.') },
  max_context_tokens: {
    create: integerIn(1, 10_000_000, 'Largest prompt + completion the upstream accepts, tokens; at least default_max_tokens.'),
  },
  input_price_micros_per_mtok: { shown: 'Customer price of input tokens per million.', create: price('Customer price of input tokens.') },
  output_price_micros_per_mtok: { shown: 'Customer price of output tokens per million.', create: price('Customer price of output tokens.') },
  provider_input_cost_micros_per_mtok: {
    shown: 'Provider cost of input tokens per million.',
    create: price('What the provider charges for input tokens (recorded, never billed). Default "0".').optional().transform((value) => value ?? 0n),
    update: price('What the provider charges for input tokens (recorded, never billed).').optional(),
  },
  provider_output_cost_micros_per_mtok: {
    shown: 'Provider cost of output tokens per million.',
    create: price('What the provider charges for output tokens (recorded, never billed). Default "0".').optional().transform((value) => value ?? 0n),
    update: price('What the provider charges for output tokens (recorded, never billed).').optional(),
  },
  ...tokenClassPriceRules(),
  upstream: {
    createError: (issue) => (issue.input === undefined ? 'is required' : 'must be a JSON object'),
    updateError: 'must be a JSON object',
    fields: {
      provider_kind: { create: providerKindGiven, update: null },
      base_url: { create: upstreamBaseUrl() },
      model: { create: displayText("The provider's model name; never shown to customers.") },
      // Write-only: sealed before it is stored, never returned.
      api_key: {
        create: upstreamApiKey.optional()
          .meta({ description: 'The provider credential. Stored encrypted (AES-256-GCM); never returned.', writeOnly: true }),
        update: upstreamApiKey.nullable().optional()
          .meta({ description: 'A new provider credential (stored encrypted, never returned), or null to remove it.', writeOnly: true }),
      },
      has_api_key: {},
      allow_private_network: {
        shown: 'true: the model\'s explicit SSRF exception: its base_url may use http and a private or loopback address, and proxies skip their connect-time address check for it.',
        create: upstreamAllowPrivateNetwork.default(false),
        update: upstreamAllowPrivateNetwork.optional(),
      },
      priority: {
        create: deploymentPriority.default(0),
        update: deploymentPriority.optional(),
      },
      weight: {
        create: deploymentWeight.default(1),
        update: deploymentWeight.optional(),
      },
    },
  },
  created_at: {},
} satisfies WireFields<GatewayModelFields>;


type Wire = typeof gatewayModelWireFields;
type Facts = GatewayModelFields;
type Strict<Shape extends z.core.$ZodShape> = z.ZodObject<Shape, z.core.$strict>;

type CreateFace<S> = S extends WireGroup ? Strict<CreateShape<S['fields']>> : S extends { create: infer C extends z.ZodType } ? C : never;
type UpdateFace<S> = S extends WireGroup ? Strict<UpdateShape<S['fields']>>
  : S extends { update: null } ? never
    : S extends { update: infer U extends z.ZodType } ? U
      : S extends { create: infer C extends z.ZodType } ? z.ZodOptional<C> : never;
/** How a response shows a domain value: money as a decimal string, an instant as ISO-8601, the rest as is. */
type ShownFace<F> = F extends GatewayModelGroupFacts ? Strict<ShownShape<F['fields']>>
  : F extends { sqlType: 'bigint'; nullable: true } ? z.ZodNullable<ReturnType<typeof moneyShown>>
    : F extends { sqlType: 'bigint' } ? ReturnType<typeof moneyShown>
      : F extends { sqlType: 'timestamptz' } ? typeof timestampShown
        : F extends { sqlType: 'integer' } ? z.ZodInt
          : F extends { sqlType: 'boolean' } ? z.ZodBoolean
            : F extends { values: infer V extends readonly [string, ...string[]] } ? (F extends { sqlType: 'text[]' } ? z.ZodArray<z.ZodEnum<z.util.ToEnum<V[number]>>> : z.ZodEnum<z.util.ToEnum<V[number]>>)
              : z.ZodString;
/** The fields of `F` that have a face, each as that face. */
type CreateShape<F> = { -readonly [K in keyof F as [CreateFace<F[K]>] extends [never] ? never : K]: CreateFace<F[K]> };
type UpdateShape<F> = { -readonly [K in keyof F as [UpdateFace<F[K]>] extends [never] ? never : K]: UpdateFace<F[K]> };
type ShownShape<F> = { -readonly [K in keyof F as F[K] extends { shown: false } ? never : K]: ShownFace<F[K]> };

const isGroup = (spec: WireField | WireGroup): spec is WireGroup => 'fields' in spec;

/** The schema a response shows a domain field with, described by `description`. */
function shownSchema(facts: GatewayModelFieldFacts, description: string | undefined): z.ZodType {
  if (facts.sqlType === 'bigint') return facts.nullable === true ? moneyShown(description ?? '').nullable() : moneyShown(description ?? '');
  if (facts.sqlType === 'timestamptz') return timestampShown;
  const values = facts.values as [string, ...string[]] | undefined;
  const schema = facts.sqlType === 'integer' ? z.int()
    : facts.sqlType === 'boolean' ? z.boolean()
      : facts.sqlType === 'text[]' ? z.array(z.enum(values!))
        : values === undefined ? z.string() : z.enum(values);
  return description === undefined ? schema : schema.meta({ description });
}

/** Builds one face of every field that has it, in declaration order (groups as strict objects). */
function shapeOf(face: 'create' | 'update' | 'shown'): Record<string, z.ZodType> {
  const faceOf = (spec: WireField, facts: GatewayModelFieldFacts): z.ZodType | undefined => {
    if (face === 'create') return spec.create;
    if (face === 'update') return spec.update === null ? undefined : spec.update ?? spec.create?.optional();
    return facts.shown === false ? undefined : shownSchema(facts, spec.shown);
  };
  const allFacts = gatewayModelFields as Readonly<Record<string, GatewayModelFieldFacts | GatewayModelGroupFacts>>;
  const shape: Record<string, z.ZodType> = {};
  for (const [name, spec] of Object.entries(gatewayModelWireFields as Readonly<Record<string, WireField | WireGroup>>)) {
    const facts = allFacts[name]!;
    if (isGroup(spec)) {
      const inner: Record<string, z.ZodType> = {};
      for (const [innerName, innerSpec] of Object.entries(spec.fields)) {
        const schema = faceOf(innerSpec, (facts as GatewayModelGroupFacts).fields[innerName]!);
        if (schema !== undefined) inner[innerName] = schema;
      }
      const error = face === 'create' ? { error: spec.createError } : face === 'update' ? { error: spec.updateError } : {};
      shape[name] = z.strictObject(inner, error);
    } else {
      const schema = faceOf(spec, facts as GatewayModelFieldFacts);
      if (schema !== undefined) shape[name] = schema;
    }
  }
  return shape;
}

/** The fields a create body may give, with their rules (catalog/http/catalog-schemas.ts adds the rules across fields). */
export const gatewayModelCreateShape = shapeOf('create') as CreateShape<Wire>;
/** The fields an update body may give, each optional (catalog/http/catalog-schemas.ts adds the rules across fields). */
export const gatewayModelUpdateShape = shapeOf('update') as UpdateShape<Wire>;
/** The record as a response shows it: money as decimal strings, instants as ISO-8601, no credential. */
export const gatewayModelShown = z.strictObject(shapeOf('shown') as ShownShape<Facts>);
/** A gateway model as a response shows it (snake_case JSON). */
export type GatewayModelJson = z.output<typeof gatewayModelShown>;

/** An update shape with its groups optional, as the update body has them (a body may leave `upstream` out). */
type OptionalGroups<Shape> = { [K in keyof Shape]: Shape[K] extends z.ZodObject ? z.ZodOptional<Shape[K]> : Shape[K] };
/** true when A and B are the same type (not merely assignable either way). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
/** Compiles only when given true. */
type Holds<Check extends true> = Check;
// The domain's types are what these rules parse and show: a field added on one side only, or
// with another type, fails here at compile time.
type _GatewayModelWireChecks = [
  Holds<Same<CamelKeys<z.output<Strict<CreateShape<Wire>>>>, CreateGatewayModelInput>>,
  Holds<Same<CamelKeys<z.output<Strict<OptionalGroups<UpdateShape<Wire>>>>>, UpdateGatewayModelInput>>,
  Holds<Same<keyof CamelKeys<GatewayModelJson>, keyof GatewayModel>>,
  Holds<Same<keyof CamelKeys<GatewayModelJson['upstream']>, keyof GatewayModel['upstream']>>,
];
