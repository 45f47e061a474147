/**
 * An in-process OTLP/HTTP trace receiver for tests: what an OpenTelemetry Collector would get
 * from the gateway, decoded from the JSON encoding the gateway's exporter sends. Listens on
 * 127.0.0.1 on a port of its own (0 = free).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An attribute value as OTLP JSON carries it (AnyValue). */
interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: OtlpAnyValue[] };
}

/** A key and value of an OTLP attribute list. */
interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}

/** One span of an ExportTraceServiceRequest, as much as tests read. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: OtlpKeyValue[];
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number; message?: string };
}

/** The body of POST /v1/traces (OTLP/HTTP, JSON encoding). */
interface ExportTraceServiceRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

/** A plain attribute value (int64s arrive as numbers or decimal strings; kept as JSON gave them). */
export type ReceivedAttribute = string | number | boolean | ReceivedAttribute[] | undefined;

/** SpanKind numbers of OTLP (SPAN_KIND_*). */
export const otlpSpanKind = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** A received span, flattened: its service's `service.name` beside it. */
export interface ReceivedSpan {
  /** The `service.name` of the resource that exported it. */
  serviceName: string;
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind number (otlpSpanKind). */
  kind: number;
  attributes: Record<string, ReceivedAttribute>;
  links: Array<{ traceId: string; spanId: string }>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
}

/** A running receiver. */
export interface OtlpReceiver {
  /** Base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter appends /v1/traces). */
  endpoint: string;
  /** Every span received so far, in arrival order. */
  spans(): ReceivedSpan[];
  /** How many export requests arrived (an empty export is still a request). */
  exportCount(): number;
  /** Every header of every export request, lower-cased names (to check OTEL_EXPORTER_OTLP_HEADERS). */
  requestHeaders(): Array<Record<string, string | string[] | undefined>>;
  /**
   * Polls until `condition` holds for the spans received, then returns them; throws with what
   * did arrive after `timeoutMs` (the exporter batches, so spans come some time after their end).
   */
  waitFor(condition: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

/** An AnyValue as a plain value. */
function plainValue(value: OtlpAnyValue | undefined): ReceivedAttribute {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return typeof value.intValue === 'string' ? Number(value.intValue) : value.intValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(plainValue);
  return undefined;
}

/** An attribute list as an object. */
function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, ReceivedAttribute> {
  return Object.fromEntries((list ?? []).map((entry) => [entry.key, plainValue(entry.value)]));
}

/** Reads a request's whole body. */
async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Starts a receiver of OTLP/HTTP JSON trace exports at POST /v1/traces, on `port` (default 0: a
 * free one). A given port that is taken rejects with EADDRINUSE.
 */
export async function startOtlpReceiver(options: { port?: number } = {}): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const headers: Array<Record<string, string | string[] | undefined>> = [];
  let exports = 0;
  const server: Server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      if (!(request.headers['content-type'] ?? '').startsWith('application/json')) {
        // The gateway's exporter sends JSON; anything else is a test set up wrongly.
        response.writeHead(415).end();
        return;
      }
      const body = JSON.parse(await bodyOf(request)) as ExportTraceServiceRequest;
      exports += 1;
      headers.push({ ...request.headers });
      for (const resourceSpans of body.resourceSpans ?? []) {
        const resource = attributesOf(resourceSpans.resource?.attributes);
        for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
          for (const span of scopeSpans.spans ?? []) {
            received.push({
              serviceName: String(resource['service.name'] ?? ''),
              traceId: span.traceId, spanId: span.spanId, parentSpanId: span.parentSpanId ?? '',
              name: span.name, kind: span.kind ?? 0, attributes: attributesOf(span.attributes),
              links: (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId })),
              statusCode: span.status?.code ?? 0,
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    })().catch(() => { if (!response.headersSent) response.writeHead(400).end(); });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => { server.off('error', reject); resolve(); });
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    exportCount: () => exports,
    requestHeaders: () => [...headers],
    async waitFor(condition, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const spans = [...received];
        if (condition(spans)) return spans;
        if (Date.now() > deadline) {
          throw new Error(`spans never met the condition; received: ${JSON.stringify(spans.map((span) => ({ service: span.serviceName, name: span.name, traceId: span.traceId })))}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
