import { GatewayError } from '@gateway/errors';
import type { HostResolver } from '@gateway/address-policy';
import type { ProviderKind } from './provider-kinds.ts';
import { allowsPrivateUpstream, resolvedHostProblem, resolvesToInternalAddressProblem, upstreamUrlProblem } from './upstream-url.ts';

/** The field a refused upstream URL is blamed on: the URL given, or the exception turned off. */
export type UpstreamRuleParam = 'upstream.base_url' | 'upstream.allow_private_network';

/** The SSRF checks of a gateway model's upstream base URL, as the create and update of a model ask them. */
export interface UpstreamGuard {
  /** Refuses a base URL the SSRF rule forbids for this provider kind and exception (400). */
  requireUpstreamUrl(baseUrl: string, providerKind: ProviderKind, allowPrivateNetwork: boolean, param?: UpstreamRuleParam): void;
  /**
   * Refuses a base URL whose host name resolves to an address the SSRF policy refuses (400; the
   * address stays in the internal message). DNS can change after this: the proxy checks again
   * at connect time, which is the real guard.
   */
  requireResolvedUpstream(baseUrl: string, allowPrivateNetwork: boolean, param?: UpstreamRuleParam): Promise<void>;
}

/** The SSRF guard: `allowPrivateUpstreams` is the platform-wide exception (CatalogSettings); `resolveHost` looks names up. */
export function createUpstreamGuard(allowPrivateUpstreams: boolean, resolveHost: HostResolver): UpstreamGuard {
  /** The SSRF policy for a model with (or without) its own exception: the platform-wide setting or its flag. */
  const upstreamPolicy = (modelAllowsPrivateNetwork: boolean) => ({ allowPrivate: allowsPrivateUpstream(allowPrivateUpstreams, modelAllowsPrivateNetwork) });
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
    const problem = await resolvedHostProblem(baseUrl, upstreamPolicy(allowPrivateNetwork), resolveHost);
    if (problem) throw refusedUpstream(param, resolvesToInternalAddressProblem, problem);
  };
  return { requireUpstreamUrl, requireResolvedUpstream };
}
