/**
 * OpenTelemetry traces end to end (docs/tracing.md): ledger, admin and proxy as processes, the
 * proxy and the ledger exporting over OTLP/HTTP to an in-process receiver. One completion is one
 * trace across proxy -> ledger -> upstream, found by the request id the response carried; and
 * with the OTEL_* variables unset, nothing is exported at all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leakMarkers } from '@gateway/fake-upstream';
import { otlpSpanKind, startOtlpReceiver, testPostgresUrl, type OtlpReceiver, type ReceivedSpan } from '@gateway/testkit';
import { startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const ledgerService = 'gateway.ledger.v1.LedgerService';
/** What the client says: it must appear in no span. */
const prompt = 'tracing-prompt-marker please reply';

/** One non-streaming completion through the proxy; returns the response's x-request-id and body. */
async function complete(gateway: E2eGateway, requestId?: string): Promise<{ requestId: string; body: Record<string, any> }> {
  const response = await fetch(`${gateway.proxyBases[0]}/chat/completions`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${gateway.apiKey}`, 'content-type': 'application/json', ...(requestId !== undefined ? { 'x-request-id': requestId } : {}),
    },
    body: JSON.stringify({ model: gateway.modelSlug, messages: [{ role: 'user', content: prompt }] }),
  });
  const body = await response.json() as Record<string, any>;
  expect(response.status, JSON.stringify(body)).toBe(200);
  return { requestId: response.headers.get('x-request-id')!, body };
}

describe.skipIf(!serverUrl)('tracing on: one trace per inference request, proxy -> ledger -> upstream', () => {
  let receiver: OtlpReceiver;
  let gateway: E2eGateway;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    // A short batch delay so spans arrive while the test waits; grants off, so the Reserve is a ledger call.
    const otel = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' };
    gateway = await startE2eGateway({ serverUrl: serverUrl!, proxyEnv: { ...otel, PROXY_CREDIT_GRANTS: 'off' }, ledgerEnv: otel });
  }, 90_000);

  afterAll(async () => {
    await gateway?.close();
    await receiver?.close();
  });

  it('joins the proxy request, its steps and the ledger operations in one trace carrying the request id', async () => {
    const { requestId } = await complete(gateway, 'trace-e2e-request-1');
    expect(requestId).toBe('trace-e2e-request-1');

    // The proxy's request span, by the request id the response carried.
    const isRequestSpan = (span: ReceivedSpan) => span.serviceName === 'inr-gateway-proxy' && span.attributes['gateway.request_id'] === requestId;
    let spans = await receiver.waitFor((received) => received.some(isRequestSpan));
    const request = spans.find(isRequestSpan)!;
    const traceId = request.traceId;
    // Every step, and the ledger's Reserve and the settle batch linking to this request's settle.
    const inTrace = (received: ReceivedSpan[]) => received.filter((span) => span.traceId === traceId);
    const settleBatchLinking = (received: ReceivedSpan[]) => received.find((span) => span.name === `${ledgerService}/SettleBatch`
      && span.links.some((link) => link.traceId === traceId));
    spans = await receiver.waitFor((received) => {
      const names = new Set(inTrace(received).map((span) => span.name));
      return ['rpm', 'reserve', 'upstream', 'settle', `${ledgerService}/Reserve`].every((name) => names.has(name)) && settleBatchLinking(received) !== undefined;
    });
    const trace = inTrace(spans);
    const byName = (name: string) => trace.find((span) => span.name === name)!;

    expect(request).toMatchObject({ name: 'POST /v1/chat/completions', kind: otlpSpanKind.server, parentSpanId: '' });
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST', 'http.route': '/v1/chat/completions', 'http.response.status_code': 200, 'gateway.model': gateway.modelSlug,
    });
    for (const step of ['rpm', 'reserve', 'upstream', 'settle']) {
      expect(byName(step), step).toMatchObject({ serviceName: 'inr-gateway-proxy', parentSpanId: request.spanId });
    }
    expect(byName('reserve').attributes).toMatchObject({ 'gateway.reserve.path': 'exact', 'gateway.reserve.outcome': 'held' });
    expect(byName('upstream')).toMatchObject({ kind: otlpSpanKind.client, attributes: { 'gateway.upstream.provider_kind': 'openai_compatible', 'gateway.upstream.outcome': 'ok' } });

    // The ledger continued the trace: its Reserve span is a child of the proxy's reserve span.
    const ledgerReserve = byName(`${ledgerService}/Reserve`);
    expect(ledgerReserve).toMatchObject({ serviceName: 'inr-gateway-ledger', kind: otlpSpanKind.server, parentSpanId: byName('reserve').spanId });
    expect(ledgerReserve.attributes).toMatchObject({
      'rpc.system.name': 'grpc', 'rpc.method': `${ledgerService}/Operate`, 'rpc.status_code': 'OK',
      'gateway.ledger.transport': 'operate', 'gateway.ledger.outcome': 'ok',
    });
    // The Settle left in a batch: the batch span links to this request's settle span.
    expect(settleBatchLinking(spans)!.links).toContainEqual({ traceId, spanId: byName('settle').spanId });
    expect(new Set(trace.map((span) => span.serviceName))).toEqual(new Set(['inr-gateway-proxy', 'inr-gateway-ledger']));
  });

  it('puts no key, credential, prompt, completion or upstream address in any span', async () => {
    const { body } = await complete(gateway);
    const reply = String(body.choices[0].message.content);
    await receiver.waitFor((received) => received.some((span) => span.name === 'settle'));
    const exported = JSON.stringify(receiver.spans());
    for (const secret of [gateway.apiKey, gateway.upstreamCredential, prompt, reply, gateway.upstream.baseUrl, 'upstream-secret-model', ...leakMarkers.all]) {
      expect(exported).not.toContain(secret);
    }
  });
});

describe.skipIf(!serverUrl)('tracing off: the OTEL_* variables unset', () => {
  it('exports nothing, not even to the default OTLP endpoint, while completions are served', async () => {
    // 4318 is where any OpenTelemetry SDK sends by default: a span sent anywhere would arrive here.
    // (Taken by something else on this machine: a free port, which then only proves nothing was configured.)
    const receiver = await startOtlpReceiver({ port: 4318 }).catch(() => startOtlpReceiver());
    const gateway = await startE2eGateway({ serverUrl: serverUrl!, proxyEnv: { PROXY_CREDIT_GRANTS: 'off' } });
    try {
      await complete(gateway);
      await gateway.settledBalance();
    } finally {
      // Stopping flushes whatever a service's tracing would hold: after it, an export would have arrived.
      const codes = await gateway.close();
      expect(codes).toEqual([0, 0, 0]);
      await receiver.close();
    }
    expect(receiver.exportCount()).toBe(0);
  }, 90_000);
});
