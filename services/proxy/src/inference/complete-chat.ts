import { ledgerV1 } from '@gateway/contracts';
import { GatewayError, toGatewayError } from '@gateway/errors';
import type { Logger } from '@gateway/logger';
import type { AuthenticatedCaller } from '../domain/authenticate.ts';
import type { ChatRequest } from '../domain/chat-request.ts';
import { buildChatCompletionBody, estimateCompletionTokens, type ChatCompletionBody } from '../domain/completion-response.ts';
import type { GatewayModelEntry } from '../domain/config-snapshot.ts';
import type { NormalizedCompletion } from '../domain/normalized-completion.ts';
import { effectiveMaxTokens, reserveMicros, usageCostMicros, type TokenUsage } from '../domain/pricing.ts';
import { estimatePromptTokens } from '../domain/token-estimate.ts';
import type { UpstreamAdapter, UpstreamRequest } from '../upstreams/upstream-adapter.ts';
import type { UpstreamOutcome } from '../upstreams/upstream-transport.ts';

/** The ledger calls a completion needs (LedgerClient in production, anything alike in tests). */
export interface LedgerPort {
  reserve(request: ledgerV1.ReserveRequest): Promise<ledgerV1.ReserveResponse>;
  settle(request: ledgerV1.SettleRequest): Promise<ledgerV1.SettleResponse | undefined>;
  release(request: ledgerV1.ReleaseRequest): Promise<ledgerV1.ReleaseResponse | undefined>;
}

/** The upstream transport a completion needs. */
export interface UpstreamPort {
  send(baseUrl: string, request: UpstreamRequest): Promise<UpstreamOutcome>;
}

/** What completeChat needs besides the request. */
export interface CompleteChatDeps {
  ledger: LedgerPort;
  upstream: UpstreamPort;
  logger: Logger;
  reserveTtlMs: number;
  /** Runs work that must finish before shutdown but not before the response (a release after a failed reserve). */
  background(work: Promise<unknown>): void;
}

/** Fields of the request's log line that completeChat fills in as it goes. */
export interface BillingLogFields {
  reservedMicros?: bigint;
  debitedMicros?: bigint;
  usageSource?: 'upstream' | 'gateway_estimate';
  promptTokens?: number;
  completionTokens?: number;
  upstreamStatus?: number;
  upstreamOutcome?: string;
}

/** One chat completion to run. */
export interface CompleteChatInput {
  /** The request id (echoed to the client and kept on the usage record). */
  requestId: string;
  /** A UUID unique to this request: the reservation is `res_<uuid>`, the completion `chatcmpl-<uuid>`. */
  requestUuid: string;
  caller: AuthenticatedCaller;
  model: GatewayModelEntry;
  adapter: UpstreamAdapter;
  request: ChatRequest;
  log: BillingLogFields;
}

const ledgerBillingMode = {
  commercial: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
  internal: ledgerV1.BillingMode.BILLING_MODE_INTERNAL,
} as const;

/** Maps a non-OK Reserve result to the error the client sees. */
function reserveRefusal(response: ledgerV1.ReserveResponse): GatewayError {
  const internalMessage = `ledger Reserve: result ${response.result}${response.detail ? ` (${response.detail})` : ''}`;
  switch (response.result) {
    case ledgerV1.ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE:
      return new GatewayError('insufficient_balance', { internalMessage });
    case ledgerV1.ReserveResult.RESERVE_RESULT_ORGANISATION_UNKNOWN:
      // The admin has not opened the organisation's account yet; retrying later can succeed.
      return new GatewayError('service_unavailable', { internalMessage });
    default:
      return new GatewayError('internal_error', { internalMessage });
  }
}

/** Keeps only errors a failed Reserve call may show the client; anything else is ours to hide. */
function reserveCallError(error: unknown): GatewayError {
  const gatewayError = toGatewayError(error);
  const shown = ['service_unavailable', 'insufficient_balance', 'budget_exceeded'];
  return shown.includes(gatewayError.code)
    ? gatewayError
    : new GatewayError('internal_error', { internalMessage: gatewayError.message, cause: error });
}

/**
 * Runs one non-streaming chat completion with its money: estimate, Reserve, upstream call,
 * then exactly one of Settle (the request may have reached the upstream) or Release (it
 * certainly did not). Upstream failures become the gateway's own 502/504; the upstream's
 * status, headers and text go nowhere but the log's status code.
 */
export async function completeChat(deps: CompleteChatDeps, input: CompleteChatInput): Promise<ChatCompletionBody> {
  const { caller, model, request, log } = input;
  const promptTokens = estimatePromptTokens(request);
  const maxTokens = effectiveMaxTokens(request.maxTokens, model, promptTokens);
  const amountMicros = reserveMicros(promptTokens, maxTokens, model);
  const reservationId = `res_${input.requestUuid}`;

  let reserved: ledgerV1.ReserveResponse;
  try {
    reserved = await deps.ledger.reserve({
      reservationId,
      organisationId: caller.organisation.id,
      projectId: caller.project.id,
      billingMode: ledgerBillingMode[caller.organisation.billingMode],
      amountMicros,
      ttlMs: BigInt(deps.reserveTtlMs),
      modelSlug: model.slug,
    });
  } catch (error) {
    // The call failed, but the ledger may have held the Reserve anyway; free it rather than
    // leave it held until it expires. Release is idempotent and harmless on an unknown id.
    deps.background(deps.ledger.release({ reservationId, reason: 'reserve_outcome_unknown' }));
    throw reserveCallError(error);
  }
  if (reserved.result !== ledgerV1.ReserveResult.RESERVE_RESULT_OK) throw reserveRefusal(reserved);
  log.reservedMicros = amountMicros;

  let outcome: UpstreamOutcome;
  try {
    const upstreamRequest = input.adapter.buildRequest(model.upstream, { request, maxTokens });
    outcome = await deps.upstream.send(model.upstream.baseUrl, upstreamRequest);
  } catch (error) {
    outcome = { kind: 'unreachable', reason: error instanceof Error ? error.name : 'unknown' };
  }
  log.upstreamOutcome = outcome.kind;

  const settle = async (usage: TokenUsage, source: 'upstream' | 'gateway_estimate'): Promise<void> => {
    const { costMicros, providerCostMicros } = usageCostMicros(usage, model);
    log.usageSource = source;
    log.promptTokens = usage.promptTokens;
    log.completionTokens = usage.completionTokens;
    const settled = await deps.ledger.settle({
      reservationId,
      inputTokens: BigInt(usage.promptTokens),
      outputTokens: BigInt(usage.completionTokens),
      costMicros,
      providerCostMicros,
      modelSlug: model.slug,
      usageSource: source === 'upstream' ? ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM : ledgerV1.UsageSource.USAGE_SOURCE_GATEWAY_ESTIMATE,
      requestId: input.requestId,
    });
    if (settled?.result === ledgerV1.SettleResult.SETTLE_RESULT_OK) {
      log.debitedMicros = settled.debitedMicros;
    } else {
      deps.logger.error({
        requestId: input.requestId, reservationId, costMicros: costMicros.toString(),
        result: settled?.result, detail: settled?.detail,
      }, 'settle failed; the ledger expiry sweeper will resolve the reservation');
    }
  };
  const noUsage: TokenUsage = { promptTokens: 0, completionTokens: 0 };

  switch (outcome.kind) {
    case 'unreachable': {
      const released = await deps.ledger.release({ reservationId, reason: 'upstream_unreachable' });
      if (released?.result !== ledgerV1.ReleaseResult.RELEASE_RESULT_OK) {
        deps.logger.error({ requestId: input.requestId, reservationId, result: released?.result }, 'release failed; the ledger expiry sweeper will resolve the reservation');
      }
      throw new GatewayError('upstream_error', { internalMessage: `upstream unreachable: ${outcome.reason}` });
    }
    case 'timeout':
      await settle(noUsage, 'gateway_estimate');
      throw new GatewayError('upstream_timeout', { internalMessage: `upstream timeout: ${outcome.reason}` });
    case 'http_error':
      log.upstreamStatus = outcome.statusCode;
      await settle(noUsage, 'gateway_estimate');
      throw new GatewayError('upstream_error', { internalMessage: `upstream answered HTTP ${outcome.statusCode}` });
    case 'failed':
      await settle(noUsage, 'gateway_estimate');
      throw new GatewayError('upstream_error', { internalMessage: `upstream call failed: ${outcome.reason}` });
    case 'response':
      break;
  }

  log.upstreamStatus = outcome.statusCode;
  let completion: NormalizedCompletion;
  try {
    completion = input.adapter.parseResponse(outcome.json);
  } catch {
    await settle(noUsage, 'gateway_estimate');
    throw new GatewayError('upstream_error', { internalMessage: 'upstream answer is not a usable completion' });
  }

  const billedUsage: TokenUsage = completion.usage ?? { promptTokens, completionTokens: estimateCompletionTokens(completion) };
  await settle(billedUsage, completion.usage === undefined ? 'gateway_estimate' : 'upstream');
  return buildChatCompletionBody({
    id: `chatcmpl-${input.requestUuid}`,
    createdS: Math.floor(Date.now() / 1000),
    modelSlug: model.slug,
    completion,
    billedUsage,
  });
}
