/**
 * Rollouts do not cut streams: a proxy process that gets SIGTERM mid-stream lets the stream finish
 * (its grace is derived from its own longest request, proxyRequestBoundMs) and bills it exactly,
 * while it takes no new request from the first moment of its drain. Ledger, admin and two proxies
 * run as processes over real PostgreSQL; the signal is the real one. Limits are short: an
 * upstream limit of 5 s gives a grace of 5 s + 2 × 1 s + 0.5 s = 7.5 s, and the stream lasts 3 s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyRequestBoundMs } from '@gateway/proxy';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const limits = { UPSTREAM_TOTAL_TIMEOUT_MS: 5_000, LEDGER_CALL_TIMEOUT_MS: 1_000, PROXY_RECALL_WAIT_MS: 500 };
/** 30 words, one every 100 ms: a 3 s stream, inside the 5 s upstream limit and longer than any fixed grace a test would pick by accident. */
const streamWords = 30;
const prompt = `Tell me a story [[fake:reply_words=${streamWords}]] [[fake:chunk_delay_ms=100]]`;

function words(count: number): string {
  return Array.from({ length: count }, (_, i) => `w${i + 1}`).join(' ');
}

/** What the client saw of one stream, read from the raw SSE (so `[DONE]` is seen as sent). */
interface StreamRead {
  text: string;
  done: boolean;
  errorEvent: boolean;
  usage: { prompt_tokens: number; completion_tokens: number; cost_micros: string } | undefined;
}

/** Opens a stream on a proxy; `firstText` resolves once its first content arrived, `read` with the whole stream. */
async function openStream(base: string, apiKey: string, model: string, requestId: string): Promise<{ firstText: Promise<void>; read: Promise<StreamRead> }> {
  const response = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'x-request-id': requestId },
    body: JSON.stringify({ model, stream: true, stream_options: { include_usage: true }, max_tokens: 64, messages: [{ role: 'user', content: prompt }] }),
  });
  expect(response.status).toBe(200);
  let markFirst = () => {};
  const firstText = new Promise<void>((resolve) => { markFirst = resolve; });
  const read = (async () => {
    const result: StreamRead = { text: '', done: false, errorEvent: false, usage: undefined };
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const bytes of response.body!) {
      buffer += decoder.decode(bytes, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const data = buffer.slice(0, end).split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('');
        buffer = buffer.slice(end + 2);
        if (data === '[DONE]') { result.done = true; continue; }
        if (data === '') continue;
        const event = JSON.parse(data) as Record<string, any>;
        if (event.error !== undefined) result.errorEvent = true;
        result.text += event.choices?.[0]?.delta?.content ?? '';
        if (event.usage) result.usage = event.usage;
        if (result.text !== '') markFirst();
      }
    }
    markFirst();
    return result;
  })();
  return { firstText, read };
}

/** Polls until the output of a process contains a line (a state, with a bound). */
async function waitForOutput(output: () => string, line: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!output().includes(line)) {
    if (Date.now() > deadline) throw new Error(`no "${line}" within ${timeoutMs} ms:\n${output().slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(!serverUrl)('SIGTERM mid-stream: the stream finishes and is billed exactly', () => {
  let gateway: E2eGateway;
  const proxyProcess = (index: number) => gateway.services.filter((service) => service.name === 'proxy')[index]!;

  beforeAll(async () => {
    gateway = await startE2eGateway({
      serverUrl: serverUrl!, proxies: 2,
      // SHUTDOWN_GRACE_MS unset: derived from these limits, as in the manifests.
      proxyEnv: { ...Object.fromEntries(Object.entries(limits).map(([name, value]) => [name, String(value)])), PROXY_GRANT_IDLE_RETURN_MS: '200' },
    });
  }, 120_000);
  afterAll(async () => { await gateway?.close(); });

  it('lets a stream that started before the SIGTERM run to [DONE], bills it to the micro-rupee, and exits 0', async () => {
    expect(proxyRequestBoundMs(limits)).toBe(7_500);
    const before = await gateway.settledBalance();
    const requestId = 'drain-stream-1';
    const stream = await openStream(gateway.proxyBases[0]!, gateway.apiKey, gateway.modelSlug, requestId);
    await stream.firstText;
    const proxy = proxyProcess(0);
    proxy.child.kill('SIGTERM');
    const read = await stream.read;
    const exitCode = await proxy.stop();

    expect(proxy.output()).toContain('stopping: not ready, draining');
    expect(proxy.output()).not.toContain('shutdown grace ran out');
    expect(read).toMatchObject({ text: words(streamWords), done: true, errorEvent: false });
    expect(exitCode).toBe(0);
    const usage = read.usage!;
    expect(usage.completion_tokens).toBe(streamWords);
    const costMicros = e2eCostMicros(usage.prompt_tokens, usage.completion_tokens);
    expect(usage.cost_micros).toBe(costMicros.toString());
    const records = ((await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage`)).data as Array<Record<string, any>>)
      .filter((record) => record.request_id === requestId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ output_tokens: streamWords, cost_micros: costMicros.toString(), usage_source: 'upstream' });
    const after = await gateway.settledBalance();
    expect(after).toMatchObject({
      held_micros: '0',
      debited_micros: (BigInt(before.debited_micros) + costMicros).toString(),
      available_micros: (BigInt(before.available_micros) - costMicros).toString(),
    });
  });

  it('takes no new request once SIGTERM arrives: not ready, new connections refused, while the old stream still runs', async () => {
    const proxy = proxyProcess(1);
    const base = gateway.proxyBases[1]!;
    const stream = await openStream(base, gateway.apiKey, gateway.modelSlug, 'drain-stream-2');
    await stream.firstText;
    proxy.child.kill('SIGTERM');
    await waitForOutput(() => proxy.output(), 'stopping: not ready, draining');

    // Refused: the listener is closed (a connection error), or at most a 503; never served.
    const status = (response: Response | unknown) => (response instanceof Response ? response.status : 'refused');
    const ready = await fetch(base.replace(/\/v1$/, '/readyz')).catch((error: unknown) => error);
    const completion = await fetch(`${base}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: gateway.modelSlug, messages: [{ role: 'user', content: 'hi' }] }),
    }).catch((error: unknown) => error);
    expect(proxy.child.exitCode).toBeNull();
    expect([503, 'refused']).toContain(status(ready));
    expect([503, 'refused']).toContain(status(completion));

    expect(await stream.read).toMatchObject({ text: words(streamWords), done: true, errorEvent: false });
    expect(await proxy.stop()).toBe(0);
  });
});
