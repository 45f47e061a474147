import { bodyOrProblem, microsOf, rankOf, type FormBody } from './form-values.ts';
import { rupeeInput } from '../common/rupee-text.ts';

/** An upstream deployment as the admin API shows it (costs in µ₹ per million tokens; the credential never, only whether one is set). */
export interface DeploymentJson {
  id: string;
  gateway_model: string;
  /** Unique within the model; never shown to customers. */
  name: string;
  priority: number;
  weight: number;
  upstream: { provider_kind: string; base_url: string; model: string; has_api_key: boolean; allow_private_network: boolean };
  provider_input_cost_micros_per_mtok: string;
  provider_output_cost_micros_per_mtok: string;
  created_at: string;
}

/** The deployment form as typed: numbers and rupee amounts (per million tokens) as text. */
export interface DeploymentForm {
  name: string;
  providerKind: string;
  baseUrl: string;
  upstreamModel: string;
  /** A new credential; '' keeps the stored one (never pre-filled). */
  apiKey: string;
  /** Whether to remove the stored credential (edit only; ignored when apiKey is given). */
  removeApiKey: boolean;
  allowPrivateNetwork: boolean;
  priority: string;
  weight: string;
  /** Rupees per million tokens, as typed. */
  providerInputCost: string;
  providerOutputCost: string;
}


/** The form for a new deployment of a model of `providerKind` (its first kind offered), or for editing `deployment` (never its credential). */
export function deploymentFormOf(deployment: DeploymentJson | undefined, providerKind: string): DeploymentForm {
  if (deployment === undefined) {
    return {
      name: '', providerKind, baseUrl: '', upstreamModel: '', apiKey: '', removeApiKey: false, allowPrivateNetwork: false,
      priority: '1', weight: '1', providerInputCost: '0', providerOutputCost: '0',
    };
  }
  return {
    name: deployment.name,
    providerKind: deployment.upstream.provider_kind,
    baseUrl: deployment.upstream.base_url,
    upstreamModel: deployment.upstream.model,
    apiKey: '',
    removeApiKey: false,
    allowPrivateNetwork: deployment.upstream.allow_private_network,
    priority: String(deployment.priority),
    weight: String(deployment.weight),
    providerInputCost: rupeeInput(deployment.provider_input_cost_micros_per_mtok),
    providerOutputCost: rupeeInput(deployment.provider_output_cost_micros_per_mtok),
  };
}

/** The body of POST /admin/v1/upstream-deployments for gateway model `slug` (the credential only when typed). */
export function createDeploymentBody(slug: string, form: DeploymentForm): FormBody {
  return bodyOrProblem(() => {
    const apiKey = form.apiKey.trim();
    return {
      gateway_model: slug,
      name: form.name.trim(),
      priority: rankOf(form.priority, 'priority'),
      weight: rankOf(form.weight, 'weight'),
      upstream: {
        provider_kind: form.providerKind,
        base_url: form.baseUrl.trim(),
        model: form.upstreamModel.trim(),
        ...(apiKey === '' ? {} : { api_key: apiKey }),
        allow_private_network: form.allowPrivateNetwork,
      },
      provider_input_cost_micros_per_mtok: microsOf(form.providerInputCost, 'provider_input_cost_micros_per_mtok'),
      provider_output_cost_micros_per_mtok: microsOf(form.providerOutputCost, 'provider_output_cost_micros_per_mtok'),
    };
  });
}

/**
 * The body of PATCH /admin/v1/upstream-deployments/{id}: only what the form changed (empty when
 * nothing did). The credential is sent only when a new one is typed (or null to remove it).
 */
export function updateDeploymentBody(deployment: DeploymentJson, form: DeploymentForm): FormBody {
  return bodyOrProblem(() => {
    const body: Record<string, unknown> = {};
    const priority = rankOf(form.priority, 'priority');
    if (priority !== deployment.priority) body.priority = priority;
    const weight = rankOf(form.weight, 'weight');
    if (weight !== deployment.weight) body.weight = weight;
    const inputCost = microsOf(form.providerInputCost, 'provider_input_cost_micros_per_mtok');
    if (inputCost !== deployment.provider_input_cost_micros_per_mtok) body.provider_input_cost_micros_per_mtok = inputCost;
    const outputCost = microsOf(form.providerOutputCost, 'provider_output_cost_micros_per_mtok');
    if (outputCost !== deployment.provider_output_cost_micros_per_mtok) body.provider_output_cost_micros_per_mtok = outputCost;
    const upstream: Record<string, unknown> = {};
    const baseUrl = form.baseUrl.trim();
    if (baseUrl !== deployment.upstream.base_url) upstream.base_url = baseUrl;
    const upstreamModel = form.upstreamModel.trim();
    if (upstreamModel !== deployment.upstream.model) upstream.model = upstreamModel;
    const apiKey = form.apiKey.trim();
    if (apiKey !== '') upstream.api_key = apiKey;
    else if (form.removeApiKey && deployment.upstream.has_api_key) upstream.api_key = null;
    if (form.allowPrivateNetwork !== deployment.upstream.allow_private_network) upstream.allow_private_network = form.allowPrivateNetwork;
    if (Object.keys(upstream).length > 0) body.upstream = upstream;
    return body;
  });
}
