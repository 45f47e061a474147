import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePrometheusText, sumSamples, type PrometheusSample } from '@gateway/testkit';
import {
  expectedCostMicros, gatewayModel, startProxyWorld, stateOf, tenant, testPrices, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

// acme pays; poor cannot afford a Reserve and may send one request a minute (its second is a 429).
const acme = tenant('acme');
const poor = tenant('poor', { rpmLimit: 1 });
const upstreamCredential = 'sk-upstream-credential-123';

/** Scrapes the proxy's metrics port until `ready` holds for its samples (polled every 10 ms, up to 5 s). */
async function scrapeWhen(ready: (samples: PrometheusSample[]) => boolean): Promise<{ samples: PrometheusSample[]; text: string }> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const text = await (await fetch(`http://127.0.0.1:${proxy.ports.metrics}/metrics`)).text();
    const samples = parsePrometheusText(text);
    if (ready(samples)) return { samples, text };
    if (Date.now() > deadline) throw new Error('timed out waiting for the metrics');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;

beforeAll(async () => {
  world = await startProxyWorld((baseUrl) => stateOf([acme, poor], [gatewayModel('chat', baseUrl)]), { requiredApiKey: upstreamCredential });
  world.ledger.credit('acme', 100_000_000n);
  world.ledger.credit('poor', 1n);
  proxy = await world.startProxy();
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => { await world?.close(); });

async function post(body: unknown, apiKey: string): Promise<Response> {
  return fetch(`${proxy.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('the proxy\'s /metrics', () => {
  it('counts requests, latency, upstream calls, Reserves, Settles, tokens and µ₹ exactly as the ledger saw them, with no tenant in any label', async () => {
    const acmeBefore = world.ledger.account('acme')!;
    const requestIds: string[] = [];

    // 200, non-streaming: the fake reports 8 prompt and 7 completion tokens.
    const completion = await client.chat.completions
      .create({ model: 'chat', messages: [{ role: 'user', content: 'Hello gateway, please answer [[fake:reply_words=7]]' }] })
      .withResponse();
    requestIds.push(completion.response.headers.get('x-request-id')!);
    expect(completion.data.usage).toMatchObject({ prompt_tokens: 8, completion_tokens: 7 });

    // 200, streaming, with the billed usage in the last chunk.
    const stream = await client.chat.completions.create({
      model: 'chat', stream: true, stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Stream please [[fake:reply_words=5]]' }],
    });
    let streamedUsage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) streamedUsage = chunk.usage ?? streamedUsage;
    expect(streamedUsage).toBeDefined();

    // 502: the upstream answers 500 (settled at zero usage).
    const failed = await post({ model: 'chat', messages: [{ role: 'user', content: '[[fake:status=500]]' }] }, acme.apiKey);
    expect(failed.status).toBe(502);

    // 402: poor's Reserve does not fit; its second request in the minute is refused by RPM (429).
    expect((await post({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }, poor.apiKey)).status).toBe(402);
    const refused = await post({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] }, poor.apiKey);
    expect(refused.status).toBe(429);
    requestIds.push(refused.headers.get('x-request-id')!);

    // 400: no messages; 404: a model the snapshot does not have (labelled `unknown`, not the name sent).
    expect((await post({ model: 'chat' }, acme.apiKey)).status).toBe(400);
    expect((await post({ model: 'no-such-model-xyz', messages: [{ role: 'user', content: 'hi' }] }, acme.apiKey)).status).toBe(404);
    // The public port serves no /metrics: an unmatched route.
    expect((await fetch(`http://127.0.0.1:${proxy.ports.http}/metrics`)).status).toBe(404);

    await proxy.idle();
    // A client can have its whole answer just before the proxy's response 'close' counts it: wait for the 8 counts.
    const { samples, text } = await scrapeWhen((scraped) => sumSamples(scraped, 'gateway_http_requests_total') >= 8);

    // Requests by route, model, status and error code ('' on success).
    const chat = { route: '/v1/chat/completions', method: 'POST' };
    expect(sumSamples(samples, 'gateway_http_requests_total', { ...chat, model: 'chat', status: '200', error_code: '' })).toBe(2);
    expect(sumSamples(samples, 'gateway_http_requests_total', { ...chat, model: 'chat', status: '502', error_code: 'upstream_error' })).toBe(1);
    expect(sumSamples(samples, 'gateway_http_requests_total', { ...chat, model: 'chat', status: '402', error_code: 'insufficient_balance' })).toBe(1);
    expect(sumSamples(samples, 'gateway_http_requests_total', { ...chat, model: '', status: '429', error_code: 'rate_limit_exceeded' })).toBe(1);
    expect(sumSamples(samples, 'gateway_http_requests_total', { ...chat, model: '', status: '400', error_code: 'invalid_request' })).toBe(1);
    expect(sumSamples(samples, 'gateway_http_requests_total', { ...chat, model: 'unknown', status: '404', error_code: 'model_not_found' })).toBe(1);
    expect(sumSamples(samples, 'gateway_http_requests_total', { route: 'unmatched', method: 'GET', status: '404', error_code: 'not_found' })).toBe(1);
    expect(sumSamples(samples, 'gateway_http_requests_total')).toBe(8);
    expect(sumSamples(samples, 'gateway_http_request_duration_seconds_count', { route: '/v1/chat/completions', model: 'chat', status_class: '2xx' })).toBe(2);
    expect(sumSamples(samples, 'gateway_http_request_duration_seconds_count')).toBe(8);

    // Time to first byte: one per completion answered, by stream or not.
    expect(sumSamples(samples, 'gateway_proxy_time_to_first_byte_seconds_count', { model: 'chat', stream: 'false' })).toBe(1);
    expect(sumSamples(samples, 'gateway_proxy_time_to_first_byte_seconds_count', { model: 'chat', stream: 'true' })).toBe(1);

    // Upstream calls: the two answers and the 500.
    const upstream = { provider_kind: 'openai_compatible', model: 'chat' };
    expect(sumSamples(samples, 'gateway_proxy_upstream_requests_total', { ...upstream, outcome: 'ok' })).toBe(2);
    expect(sumSamples(samples, 'gateway_proxy_upstream_requests_total', { ...upstream, outcome: 'http_error' })).toBe(1);
    expect(sumSamples(samples, 'gateway_proxy_upstream_duration_seconds_count', { ...upstream, outcome: 'ok' })).toBe(2);
    expect(sumSamples(samples, 'gateway_proxy_upstream_duration_seconds_count', { ...upstream, outcome: 'http_error' })).toBe(1);

    // Reserves and Settles (credit grants are off: the exact path), and the RPM refusal.
    expect(sumSamples(samples, 'gateway_proxy_reserves_total', { path: 'exact', outcome: 'held' })).toBe(3);
    expect(sumSamples(samples, 'gateway_proxy_reserves_total', { path: 'exact', outcome: 'insufficient_balance' })).toBe(1);
    expect(sumSamples(samples, 'gateway_proxy_ledger_call_duration_seconds_count', { operation: 'reserve', path: 'exact' })).toBe(4);
    expect(sumSamples(samples, 'gateway_proxy_ledger_call_duration_seconds_count', { operation: 'settle', path: 'exact' })).toBe(3);
    expect(sumSamples(samples, 'gateway_proxy_rpm_refusals_total', { scope: 'organisation' })).toBe(1);

    // Tokens and µ₹: the very numbers of the Settles the ledger received, and what it debited.
    const settles = world.ledger.calls.settle;
    expect(settles).toHaveLength(3);
    const inputTokens = settles.reduce((total, settle) => total + Number(settle.inputTokens), 0);
    const outputTokens = settles.reduce((total, settle) => total + Number(settle.outputTokens), 0);
    const chargedMicros = settles.reduce((total, settle) => total + settle.costMicros, 0n);
    expect(inputTokens).toBe(8 + streamedUsage!.prompt_tokens);
    expect(outputTokens).toBe(7 + streamedUsage!.completion_tokens);
    expect(sumSamples(samples, 'gateway_proxy_tokens_total', { model: 'chat', kind: 'input' })).toBe(inputTokens);
    expect(sumSamples(samples, 'gateway_proxy_tokens_total', { model: 'chat', kind: 'output' })).toBe(outputTokens);
    expect(chargedMicros).toBe(world.ledger.account('acme')!.debitedMicros - acmeBefore.debitedMicros);
    expect(chargedMicros).toBe(
      expectedCostMicros(8, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(7, testPrices.outputPriceMicrosPerMtok)
      + expectedCostMicros(streamedUsage!.prompt_tokens, testPrices.inputPriceMicrosPerMtok)
      + expectedCostMicros(streamedUsage!.completion_tokens, testPrices.outputPriceMicrosPerMtok),
    );
    expect(sumSamples(samples, 'gateway_proxy_charged_micros_total', { model: 'chat' })).toBe(Number(chargedMicros));

    // State at scrape time: nothing waiting in the outbox, a fresh snapshot, no grant (grants off).
    expect(sumSamples(samples, 'gateway_proxy_settle_outbox_depth')).toBe(0);
    expect(sumSamples(samples, 'gateway_proxy_settle_outbox_oldest_age_seconds')).toBe(0);
    expect(sumSamples(samples, 'gateway_proxy_settle_outbox_abandoned_total')).toBe(0);
    // Both reasons' series exist from the start at 0, so the alert's rate() sees the first drop.
    const dropped = samples.filter((sample) => sample.name === 'gateway_proxy_request_log_dropped_total');
    expect(dropped.map((sample) => [sample.labels.reason, sample.value]).sort()).toEqual([['buffer_full', 0], ['refused', 0]]);
    expect(sumSamples(samples, 'gateway_proxy_config_fresh')).toBe(1);
    expect(sumSamples(samples, 'gateway_proxy_config_version')).toBeGreaterThan(0);
    expect(sumSamples(samples, 'gateway_proxy_config_staleness_seconds')).toBeGreaterThanOrEqual(0);
    expect(sumSamples(samples, 'gateway_proxy_grant_held_micros')).toBe(0);
    expect(sumSamples(samples, 'gateway_proxy_active_streams')).toBe(0);

    // No organisation, project, key, credential or request id anywhere in the text.
    for (const secret of ['acme', 'poor', acme.key.keyId, poor.key.keyId, acme.project.id, acme.apiKey, poor.apiKey, upstreamCredential, ...requestIds]) {
      expect(text, secret).not.toContain(secret);
    }
  });

  it('counts a client that hangs up before a non-streaming answer as 499 (error_code \'\'), not as a 200 with a first byte', async () => {
    const chat = { route: '/v1/chat/completions', method: 'POST', model: 'chat' };
    const { samples: before } = await scrapeWhen(() => true);
    const countOf = (samples: PrometheusSample[], status: string) => sumSamples(samples, 'gateway_http_requests_total', { ...chat, status });
    const firstBytes = (samples: PrometheusSample[]) => sumSamples(samples, 'gateway_proxy_time_to_first_byte_seconds_count', { model: 'chat', stream: 'false' });

    // The upstream answers after 1.5 s; the client leaves as soon as the upstream has the request.
    const hangUp = new AbortController();
    const answer = fetch(`${proxy.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat', messages: [{ role: 'user', content: 'slow [[fake:delay_ms=1500]] [[fake:tag=hang-up]]' }] }),
      signal: hangUp.signal,
    });
    await waitFor(() => world.upstream.requests.some((request) => request.tag === 'hang-up'), 5000, 'the upstream to receive the request');
    hangUp.abort();
    await expect(answer).rejects.toThrow();

    await scrapeWhen((scraped) => countOf(scraped, '499') === countOf(before, '499') + 1);
    // The handler goes on to the upstream's answer and its Settle; then nothing more is counted.
    await proxy.idle();
    const { samples } = await scrapeWhen(() => true);
    expect(sumSamples(samples, 'gateway_http_requests_total', { ...chat, status: '499', error_code: '' }) - countOf(before, '499')).toBe(1);
    expect(countOf(samples, '200')).toBe(countOf(before, '200'));
    expect(firstBytes(samples)).toBe(firstBytes(before));
    expect(sumSamples(samples, 'gateway_http_request_duration_seconds_count', { route: '/v1/chat/completions', model: 'chat', status_class: '4xx' })
      - sumSamples(before, 'gateway_http_request_duration_seconds_count', { route: '/v1/chat/completions', model: 'chat', status_class: '4xx' })).toBe(1);
  });
});
