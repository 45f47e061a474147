import { afterEach, describe, expect, it } from 'vitest';
import { ROOT_CONTEXT, SpanKind, trace } from '@opentelemetry/api';
import { ConfigError } from '@gateway/config';
import { otlpSpanKind, startOtlpReceiver, type OtlpReceiver } from '@gateway/testkit';
import {
  activeTraceparent, contextFromTraceparent, linksFromTraceparents, requestContextOf, startTracing, traceparentOf, tracesEndpointOf,
  tracingRequested, withContext, type ServiceTracing,
} from './tracing.ts';

const sampleTraceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracing configuration', () => {
  it('is on only when an OTLP endpoint is set, and OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER=none turn it off', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    const off = startTracing('proxy', {});
    expect(off.enabled).toBe(false);
    expect(off.endpoint).toBeUndefined();
  });

  it('resolves the traces URL as the specification does: the signal endpoint as given, the general one plus /v1/traces', () => {
    expect(tracesEndpointOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe('http://collector:4318/v1/traces');
    expect(tracesEndpointOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe('http://collector:4318/v1/traces');
    expect(tracesEndpointOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example/otlp/spans',
    })).toBe('https://traces.example/otlp/spans');
  });

  it('refuses a malformed endpoint, sampler or ratio with a ConfigError that does not echo the value', () => {
    const secretUrl = 'grpc://user:s3cret@collector:4317';
    const endpointError = (() => { try { tracesEndpointOf({ OTEL_EXPORTER_OTLP_ENDPOINT: secretUrl }); } catch (error) { return error; } })();
    expect(endpointError).toBeInstanceOf(ConfigError);
    expect(String(endpointError)).not.toContain('s3cret');
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' };
    expect(() => startTracing('ledger', { ...on, OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => startTracing('ledger', { ...on, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' })).toThrow(/OTEL_TRACES_SAMPLER_ARG/);
    expect(() => startTracing('ledger', { ...on, OTEL_BSP_SCHEDULE_DELAY: '-3' })).toThrow(/OTEL_BSP_SCHEDULE_DELAY/);
  });
});

describe('traceparent helpers', () => {
  it('round-trips a W3C traceparent through a context', () => {
    const context = contextFromTraceparent(sampleTraceparent);
    expect(trace.getSpanContext(context)?.isRemote).toBe(true);
    expect(traceparentOf(context)).toBe(sampleTraceparent);
  });

  it('starts from the root context on a missing or malformed traceparent, and links only the valid ones', () => {
    expect(traceparentOf(contextFromTraceparent(undefined))).toBeUndefined();
    expect(traceparentOf(contextFromTraceparent('00-00000000000000000000000000000000-b7ad6b7169203331-01'))).toBeUndefined();
    expect(traceparentOf(contextFromTraceparent('not a traceparent'))).toBeUndefined();
    const links = linksFromTraceparents([sampleTraceparent, undefined, 'garbage']);
    expect(links.map((link) => link.context.spanId)).toEqual(['b7ad6b7169203331']);
  });

  it('gives no traceparent to outgoing calls when nothing is traced', () => {
    expect(activeTraceparent()).toBeUndefined();
    expect(traceparentOf(ROOT_CONTEXT)).toBeUndefined();
  });
});

describe('tracing on: spans exported over OTLP/HTTP', () => {
  let receiver: OtlpReceiver | undefined;
  const started: ServiceTracing[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((tracing) => tracing.shutdown()));
    await receiver?.close();
  });

  it('exports each service under its own service.name, with the headers asked for, and flushes at shutdown', async () => {
    receiver = await startOtlpReceiver();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=abc%20def' };
    const proxy = startTracing('proxy', env);
    const ledger = startTracing('ledger', env);
    started.push(proxy, ledger);
    expect(proxy.enabled).toBe(true);
    expect(proxy.endpoint).toBe(`${receiver.endpoint}/v1/traces`);

    // A proxy request span; an outgoing call inside it carries the slot's span (the step), then the request's.
    const requestSpan = proxy.tracer.startSpan('POST /v1/chat/completions', { kind: SpanKind.SERVER });
    const slot = { span: undefined as ReturnType<typeof proxy.tracer.startSpan> | undefined };
    let stepTraceparent: string | undefined;
    let requestTraceparent: string | undefined;
    await withContext(requestContextOf(requestSpan, slot), async () => {
      const reserveSpan = proxy.tracer.startSpan('reserve');
      slot.span = reserveSpan;
      await Promise.resolve();
      stepTraceparent = activeTraceparent();
      reserveSpan.end();
      slot.span = undefined;
      await new Promise((resolve) => setTimeout(resolve, 1));
      requestTraceparent = activeTraceparent();
    });
    requestSpan.end();
    expect(requestTraceparent).toBe(traceparentOf(trace.setSpan(ROOT_CONTEXT, requestSpan)));
    // The ledger continues the trace from what the call carried.
    const ledgerSpan = ledger.tracer.startSpan('gateway.ledger.v1.LedgerService/Reserve', { kind: SpanKind.SERVER }, contextFromTraceparent(stepTraceparent));
    ledgerSpan.end();

    await proxy.shutdown();
    await ledger.shutdown();
    const spans = receiver.spans();
    const byName = new Map(spans.map((span) => [span.name, span]));
    const request = byName.get('POST /v1/chat/completions')!;
    const reserve = byName.get('reserve')!;
    const ledgerReserve = byName.get('gateway.ledger.v1.LedgerService/Reserve')!;
    expect([request.serviceName, reserve.serviceName, ledgerReserve.serviceName]).toEqual(['inr-gateway-proxy', 'inr-gateway-proxy', 'inr-gateway-ledger']);
    expect(new Set([request.traceId, reserve.traceId, ledgerReserve.traceId]).size).toBe(1);
    expect(reserve.parentSpanId).toBe(request.spanId);
    expect(ledgerReserve.parentSpanId).toBe(reserve.spanId);
    expect(request.kind).toBe(otlpSpanKind.server);
    expect(receiver.requestHeaders().every((headers) => headers['x-collector-token'] === 'abc def')).toBe(true);
  });

  it('names the service OTEL_SERVICE_NAME when set, and exports nothing a never-sampling sampler drops', async () => {
    receiver = await startOtlpReceiver();
    const named = startTracing('admin', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'gateway-admin-eu' });
    const dropped = startTracing('proxy', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_TRACES_SAMPLER: 'always_off' });
    started.push(named, dropped);
    named.tracer.startSpan('kept').end();
    dropped.tracer.startSpan('dropped').end();
    await named.shutdown();
    await dropped.shutdown();
    expect(receiver.spans().map((span) => [span.serviceName, span.name])).toEqual([['gateway-admin-eu', 'kept']]);
  });
});
