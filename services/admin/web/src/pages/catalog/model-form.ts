import { bodyOrProblem, FieldProblem, microsOf, rankOf, type FormBody } from './form-values.ts';
import { rupeeInput } from '../common/rupee-text.ts';

/** A gateway model as the admin API shows it (prices in µ₹ per million tokens; the upstream credential never, only whether one is set). */
export interface GatewayModelJson {
  slug: string;
  display_name: string;
  default_max_tokens: number;
  max_context_tokens: number;
  input_price_micros_per_mtok: string;
  output_price_micros_per_mtok: string;
  provider_input_cost_micros_per_mtok: string;
  provider_output_cost_micros_per_mtok: string;
  /** The price sheet by token class: µ₹ per million tokens; reasoning null = as output. */
  cached_input_price_micros_per_mtok: string;
  cache_write_5m_price_micros_per_mtok: string;
  cache_write_1h_price_micros_per_mtok: string;
  reasoning_price_micros_per_mtok: string | null;
  audio_input_price_micros_per_mtok: string;
  image_input_price_micros_per_mtok: string;
  provider_cached_input_cost_micros_per_mtok: string;
  provider_cache_write_5m_cost_micros_per_mtok: string;
  provider_cache_write_1h_cost_micros_per_mtok: string;
  provider_reasoning_cost_micros_per_mtok: string | null;
  provider_audio_input_cost_micros_per_mtok: string;
  provider_image_input_cost_micros_per_mtok: string;
  /** Reasoning controls the upstream takes (docs/surfaces/reasoning.md); absent from an older admin. */
  reasoning_efforts?: string[];
  thinking_modes?: string[];
  max_thinking_budget_tokens?: number;
  returns_reasoning?: boolean;
  upstream: {
    provider_kind: string;
    base_url: string;
    model: string;
    has_api_key: boolean;
    allow_private_network: boolean;
    /** The model's own upstream among its deployments (docs/proxy.md "Routing"): lower is tried first; share within a priority. */
    priority: number;
    weight: number;
  };
  created_at: string;
}

/** The upstream provider kinds the admin accepts (services/admin/src/catalog/domain/provider-kinds.ts). */
export const providerKinds = ['openai_compatible', 'openai', 'azure_openai', 'vllm', 'ollama', 'groq', 'together', 'anthropic'] as const;

/** The gateway model form as typed: numbers and rupee amounts (per million tokens) as text. */
export interface ModelForm {
  slug: string;
  displayName: string;
  defaultMaxTokens: string;
  maxContextTokens: string;
  /** Rupees per million tokens, as typed. */
  inputPrice: string;
  outputPrice: string;
  providerInputCost: string;
  providerOutputCost: string;
  providerKind: string;
  baseUrl: string;
  upstreamModel: string;
  /** A new credential; '' keeps the stored one (never pre-filled). */
  apiKey: string;
  /** Whether to remove the stored credential (edit only; ignored when apiKey is given). */
  removeApiKey: boolean;
  allowPrivateNetwork: boolean;
  /** The upstream's priority (0..100) and weight (1..1000) among the model's deployments, as typed. */
  priority: string;
  weight: string;
  /** Rupees per million tokens of each token class, as typed, by API name ('' on create: the input price; '' for reasoning: as output). */
  classPrices: Record<TokenClassPriceField, string>;
  /** Effort levels, comma-separated as typed (e.g. `low, medium, high`). */
  reasoningEfforts: string;
  /** Anthropic thinking modes, comma-separated as typed (`enabled, adaptive`). */
  thinkingModes: string;
  /** Tokens, as typed; 0: bounded by max_tokens only. */
  maxThinkingBudgetTokens: string;
  returnsReasoning: boolean;
}

/** The token class price fields the form edits, customer prices then provider costs. */
export const tokenClassPriceFields = [
  'cached_input_price_micros_per_mtok', 'cache_write_5m_price_micros_per_mtok', 'cache_write_1h_price_micros_per_mtok',
  'reasoning_price_micros_per_mtok', 'audio_input_price_micros_per_mtok', 'image_input_price_micros_per_mtok',
  'provider_cached_input_cost_micros_per_mtok', 'provider_cache_write_5m_cost_micros_per_mtok', 'provider_cache_write_1h_cost_micros_per_mtok',
  'provider_reasoning_cost_micros_per_mtok', 'provider_audio_input_cost_micros_per_mtok', 'provider_image_input_cost_micros_per_mtok',
] as const;
/** One token class price field of a gateway model. */
export type TokenClassPriceField = (typeof tokenClassPriceFields)[number];

/** Whether a class price field may be null (reasoning: null prices it as output). */
function nullableClassField(field: TokenClassPriceField): boolean {
  return field.includes('reasoning');
}

/** The request body a form makes, or the field (API name) it cannot make and why. */
export type ModelBody = FormBody;

/** The form for a new model (empty) or for editing `model` (its values; never its credential). */
export function modelFormOf(model?: GatewayModelJson): ModelForm {
  if (model === undefined) {
    return {
      slug: '', displayName: '', defaultMaxTokens: '1024', maxContextTokens: '8192', inputPrice: '', outputPrice: '',
      providerInputCost: '0', providerOutputCost: '0', providerKind: 'openai_compatible', baseUrl: '', upstreamModel: '',
      apiKey: '', removeApiKey: false, allowPrivateNetwork: false, priority: '0', weight: '1',
      classPrices: Object.fromEntries(tokenClassPriceFields.map((field) => [field, ''])) as Record<TokenClassPriceField, string>,
      reasoningEfforts: '', thinkingModes: '', maxThinkingBudgetTokens: '0', returnsReasoning: false,
    };
  }
  return {
    slug: model.slug,
    displayName: model.display_name,
    defaultMaxTokens: String(model.default_max_tokens),
    maxContextTokens: String(model.max_context_tokens),
    inputPrice: rupeeInput(model.input_price_micros_per_mtok),
    outputPrice: rupeeInput(model.output_price_micros_per_mtok),
    providerInputCost: rupeeInput(model.provider_input_cost_micros_per_mtok),
    providerOutputCost: rupeeInput(model.provider_output_cost_micros_per_mtok),
    providerKind: model.upstream.provider_kind,
    baseUrl: model.upstream.base_url,
    upstreamModel: model.upstream.model,
    apiKey: '',
    removeApiKey: false,
    allowPrivateNetwork: model.upstream.allow_private_network,
    priority: String(model.upstream.priority),
    weight: String(model.upstream.weight),
    classPrices: Object.fromEntries(tokenClassPriceFields.map((field) => {
      const price = model[field];
      return [field, price === null || price === undefined ? '' : rupeeInput(price)];
    })) as Record<TokenClassPriceField, string>,
    reasoningEfforts: (model.reasoning_efforts ?? []).join(', '),
    thinkingModes: (model.thinking_modes ?? []).join(', '),
    maxThinkingBudgetTokens: String(model.max_thinking_budget_tokens ?? 0),
    returnsReasoning: model.returns_reasoning ?? false,
  };
}

/** A comma- or space-separated list as typed, without empty entries. */
function listOf(text: string): string[] {
  return text.split(/[\s,]+/).filter((entry) => entry !== '');
}

/** The reasoning controls of the form in API terms (the API checks the values). */
function parsedReasoning(form: ModelForm) {
  return {
    reasoning_efforts: listOf(form.reasoningEfforts),
    thinking_modes: listOf(form.thinkingModes),
    max_thinking_budget_tokens: wholeNumber(form.maxThinkingBudgetTokens, 'max_thinking_budget_tokens'),
    returns_reasoning: form.returnsReasoning,
  };
}

function wholeNumber(text: string, param: string): number {
  const trimmed = text.trim();
  if (!/^\d{1,9}$/.test(trimmed)) throw new FieldProblem(param, 'Enter a whole number of tokens.');
  return Number(trimmed);
}

/** The numbers and prices of the form in API terms (µ₹ strings, integers). */
function parsedFigures(form: ModelForm) {
  return {
    default_max_tokens: wholeNumber(form.defaultMaxTokens, 'default_max_tokens'),
    max_context_tokens: wholeNumber(form.maxContextTokens, 'max_context_tokens'),
    input_price_micros_per_mtok: microsOf(form.inputPrice, 'input_price_micros_per_mtok'),
    output_price_micros_per_mtok: microsOf(form.outputPrice, 'output_price_micros_per_mtok'),
    provider_input_cost_micros_per_mtok: microsOf(form.providerInputCost, 'provider_input_cost_micros_per_mtok'),
    provider_output_cost_micros_per_mtok: microsOf(form.providerOutputCost, 'provider_output_cost_micros_per_mtok'),
  };
}

/**
 * The class prices of the form in API terms: each typed one as µ₹; an empty one left out on
 * create (the input price, or as output), and on edit null for reasoning (as output) or left
 * unchanged for an input class (which has no "unset").
 */
function classPriceFigures(form: ModelForm, editing: boolean): Record<string, string | null> {
  const figures: Record<string, string | null> = {};
  for (const field of tokenClassPriceFields) {
    const typed = form.classPrices[field].trim();
    if (typed !== '') figures[field] = microsOf(typed, field);
    else if (editing && nullableClassField(field)) figures[field] = null;
  }
  return figures;
}

/** The body of POST /admin/v1/gateway-models from the form (the credential only when typed; the display name only when given). */
export function createModelBody(form: ModelForm): ModelBody {
  return bodyOrProblem(() => {
    const apiKey = form.apiKey.trim();
    const displayName = form.displayName.trim();
    return {
      slug: form.slug.trim(),
      ...(displayName === '' ? {} : { display_name: displayName }),
      ...parsedFigures(form),
      ...classPriceFigures(form, false),
      ...parsedReasoning(form),
      upstream: {
        provider_kind: form.providerKind,
        base_url: form.baseUrl.trim(),
        model: form.upstreamModel.trim(),
        ...(apiKey === '' ? {} : { api_key: apiKey }),
        allow_private_network: form.allowPrivateNetwork,
        priority: rankOf(form.priority, 'upstream.priority'),
        weight: rankOf(form.weight, 'upstream.weight'),
      },
    };
  });
}

/**
 * The body of PATCH /admin/v1/gateway-models/{slug}: only what the form changed (an empty body
 * when nothing did). The credential is sent only when a new one is typed (or null to remove it);
 * an empty credential field keeps the stored one.
 */
export function updateModelBody(model: GatewayModelJson, form: ModelForm): ModelBody {
  return bodyOrProblem(() => {
    const body: Record<string, unknown> = {};
    const displayName = form.displayName.trim();
    if (displayName !== model.display_name) body.display_name = displayName;
    for (const [name, value] of Object.entries(parsedFigures(form))) {
      if (String(value) !== String(model[name as keyof GatewayModelJson])) body[name] = value;
    }
    for (const [name, value] of Object.entries(classPriceFigures(form, true))) {
      if (value !== (model[name as keyof GatewayModelJson] ?? null)) body[name] = value;
    }
    const reasoning = parsedReasoning(form);
    if (reasoning.reasoning_efforts.join(',') !== (model.reasoning_efforts ?? []).join(',')) body.reasoning_efforts = reasoning.reasoning_efforts;
    if (reasoning.thinking_modes.join(',') !== (model.thinking_modes ?? []).join(',')) body.thinking_modes = reasoning.thinking_modes;
    if (reasoning.max_thinking_budget_tokens !== (model.max_thinking_budget_tokens ?? 0)) body.max_thinking_budget_tokens = reasoning.max_thinking_budget_tokens;
    if (reasoning.returns_reasoning !== (model.returns_reasoning ?? false)) body.returns_reasoning = reasoning.returns_reasoning;
    const upstream: Record<string, unknown> = {};
    const baseUrl = form.baseUrl.trim();
    if (baseUrl !== model.upstream.base_url) upstream.base_url = baseUrl;
    const upstreamModel = form.upstreamModel.trim();
    if (upstreamModel !== model.upstream.model) upstream.model = upstreamModel;
    const apiKey = form.apiKey.trim();
    if (apiKey !== '') upstream.api_key = apiKey;
    else if (form.removeApiKey && model.upstream.has_api_key) upstream.api_key = null;
    if (form.allowPrivateNetwork !== model.upstream.allow_private_network) upstream.allow_private_network = form.allowPrivateNetwork;
    const priority = rankOf(form.priority, 'upstream.priority');
    if (priority !== model.upstream.priority) upstream.priority = priority;
    const weight = rankOf(form.weight, 'upstream.weight');
    if (weight !== model.upstream.weight) upstream.weight = weight;
    if (Object.keys(upstream).length > 0) body.upstream = upstream;
    return body;
  });
}
