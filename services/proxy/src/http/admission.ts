import type { ServerResponse } from 'node:http';
import { GatewayError } from '@gateway/errors';
import { createJsonBodyReader } from '@gateway/http-guard';
import { authenticate, type AuthenticatedCaller } from '../domain/authenticate.ts';
import type { ConfigSnapshot, OrganisationEntry } from '../domain/config-snapshot.ts';
import { rateLimitHeaders, retryAfterSeconds, type RateLimitDecision } from '../domain/rate-limit.ts';
import { elapsedMs } from '../telemetry/elapsed-ms.ts';
import { BodyByteBudget } from './body-byte-budget.ts';
import type { ApiKeySource, HttpAppServices, InferenceRouteKit } from './route-kit.ts';
import type { RequestContext } from './request-context.ts';
import type { RoutedRequest } from './router.ts';

/** The steps that admit a request to an inference route, in their order: snapshot → key → RPM (→ body). */
type Admission = Pick<InferenceRouteKit, 'identify' | 'admit' | 'readBodyWithinRateLimit'>;

/**
 * The admission of an inference request: a fresh snapshot (else 503), its API key (401/403),
 * the organisation's RPM pool (429), and its JSON body read within PROXY_MAX_BODY_BYTES and the
 * process-wide PROXY_MAX_INFLIGHT_BODY_BYTES, all before any money moves.
 */
export function createAdmission(services: HttpAppServices): Admission {
  // NUL is legal in message text and goes to the upstream (the proxy stores no content); a lone
  // surrogate is not Unicode and is refused (docs/proxy.md, "Bad input").
  // Read only for a caller whose key has passed (see readBodyWithinRateLimit for why not after RPM).
  const readJsonBody = createJsonBodyReader({ limitBytes: services.maxBodyBytes, text: 'unicode' });
  const bodyBudget = new BodyByteBudget(services.maxInflightBodyBytes, services.maxBodyBytes);

  function requireSnapshot(): ConfigSnapshot {
    // A request that reaches us on a kept-alive connection after SIGTERM is refused, not started.
    if (services.isShuttingDown()) throw new GatewayError('service_unavailable', { internalMessage: 'shutting down' });
    const snapshot = services.freshSnapshot();
    if (snapshot === undefined) {
      throw new GatewayError('service_unavailable', { internalMessage: 'no fresh config snapshot' });
    }
    return snapshot;
  }

  /** Sets the x-ratelimit-* headers of a decision; throws the 429 of a refusal. */
  function answerRateLimit(decision: RateLimitDecision, res: ServerResponse, context: RequestContext, startedAtMs: number): void {
    context.log.rateLimitMs = elapsedMs(startedAtMs);
    context.observer?.rpmChecked(startedAtMs, decision.allowed);
    const headers = rateLimitHeaders(decision);
    for (const name in headers) res.setHeader(name, headers[name]!);
    if (!decision.allowed) {
      context.observer?.rpmRefused('organisation');
      throw new GatewayError('rate_limit_exceeded', { headers: { 'retry-after': String(retryAfterSeconds(decision)) } });
    }
  }

  /**
   * Counts the request against its organisation's pool; sets the x-ratelimit-* headers either way.
   * Synchronous (no promise) when the limiter decides without I/O (a leased token, a full pool,
   * the in-process pool); consume() only when decideNow has no answer, or the request would be
   * counted twice.
   */
  function applyRateLimit(organisation: OrganisationEntry, res: ServerResponse, context: RequestContext): Promise<void> | undefined {
    if (organisation.rpmLimit === 0) return undefined; // 0: the organisation has no RPM limit
    const startedAtMs = performance.now();
    const decided = services.rateLimiter.decideNow?.(organisation.id, organisation.rpmLimit);
    if (decided !== undefined) {
      answerRateLimit(decided, res, context, startedAtMs);
      return undefined;
    }
    return services.rateLimiter.consume(organisation.id, organisation.rpmLimit, context.requestUuid)
      .then((decision) => { answerRateLimit(decision, res, context, startedAtMs); });
  }

  /** Snapshot and key: what every inference route checks first, synchronously. */
  function identify(req: RoutedRequest, context: RequestContext, keySource: ApiKeySource = 'bearer'): { snapshot: ConfigSnapshot; caller: AuthenticatedCaller } {
    const snapshot = requireSnapshot();
    // Anthropic's clients send the key as x-api-key; Authorization wins when both are present.
    const xApiKey = req.headers['x-api-key'];
    const authorization = keySource === 'bearer_or_x_api_key' && req.headers.authorization === undefined && typeof xApiKey === 'string'
      ? `Bearer ${xApiKey}`
      : req.headers.authorization;
    // The log fields are set as soon as the key's project is known, so a refused key (a retired
    // one included) still reaches its project's request log; the answer does not change.
    const caller = authenticate(snapshot, authorization, (organisationId, projectId) => {
      context.log.organisationId = organisationId;
      context.log.projectId = projectId;
    });
    return { snapshot, caller };
  }

  /** Snapshot, key and RPM: the common start of the routes that read no body. */
  async function admit(req: RoutedRequest, res: ServerResponse, context: RequestContext): Promise<{ snapshot: ConfigSnapshot; caller: AuthenticatedCaller }> {
    const identified = identify(req, context);
    await applyRateLimit(identified.caller.organisation, res, context);
    return identified;
  }

  return {
    identify,
    admit,
    async readBodyWithinRateLimit(req, res, context, caller) {
      // The body's share of PROXY_MAX_INFLIGHT_BODY_BYTES before its first byte is read (a 503
      // when it does not fit, before the RPM count), given back once it is parsed or has failed.
      const giveBack = bodyBudget.take(req.headers);
      // The body is read while the RPM check's Redis round trip is in flight rather than after it
      // (that round trip is on every request's latency). Only callers with a valid key get this
      // far, the body is bounded by PROXY_MAX_BODY_BYTES, and a refusal still answers 429 first.
      const body = readJsonBody(req.message).then((json) => ({ json }), (error: unknown) => ({ error })).finally(giveBack);
      const limited = applyRateLimit(caller.organisation, res, context);
      if (limited !== undefined) await limited;
      const read = await body;
      if ('error' in read) throw read.error;
      return read.json;
    },
  };
}
