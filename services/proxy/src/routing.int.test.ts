import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configV1, type ledgerV1 } from '@gateway/contracts';
import { leakMarkers, startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { parsePrometheusText, type PrometheusSample } from '@gateway/testkit';
import {
  expectedCostMicros, gatewayDeployment, gatewayModel, lastSettleOf, startProxyWorld, stateOf, tenant, testPrices, waitFor, type ProxyWorld, type TestProxy,
} from './test-support/proxy-world.ts';

// One slug, three deployments (docs/proxy.md "Routing"): `primary` refuses (429 and 503, with a
// vendor's headers and texts), `slow` hangs past its attempt timeout, `healthy` (the fake
// upstream) answers. Every request succeeds through `healthy`, billed once at the slug's price
// with healthy's provider cost and name; the hanging attempts are recorded as provider cost; the
// failing ones are ejected and come back; nothing of them reaches the client.

const credential = 'sk-upstream-credential-123';
const acme = tenant('acme', { allowedGatewayModelSlugs: ['chat', 'embed', 'tools', 'cutting'] });
/** What only the refusing upstream says: its texts and headers must never reach a client. */
const refusalSecrets = ['REFUSING-VENDOR-SECRET', 'x-refusing-region', 'eu-secret-region-7', 'refusing-vendor/9.9'];
/** Provider costs of each deployment, µ₹ per million tokens: distinct, so the Settle shows which answered. */
const costs = {
  primary: { input: testPrices.providerInputCostMicrosPerMtok, output: testPrices.providerOutputCostMicrosPerMtok },
  slow: { input: 1_700_003n, output: 2_900_009n },
  healthy: { input: 900_007n, output: 2_100_011n },
};

/** A vendor that refuses every request: 429 and 503 in turn, with revealing headers and body texts. */
async function startRefusingUpstream(): Promise<{ url: string; requests: () => number; server: Server }> {
  let count = 0;
  const server = createServer((req, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      const status = count % 2 === 1 ? 429 : 503;
      const body = JSON.stringify({ error: { message: `Capacity exhausted in eu-secret-region-7 (REFUSING-VENDOR-SECRET #${count})`, type: 'overloaded' } });
      res.writeHead(status, {
        'content-type': 'application/json', 'x-refusing-region': 'eu-secret-region-7', server: 'refusing-vendor/9.9',
        // Zero: nothing to back off for, so the next request tries it again (the router's unit test covers back-off).
        'retry-after': '0',
      });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests: () => count, server };
}

/** A vendor that reads the request and never answers (its sockets are cut at close). */
async function startHangingUpstream(): Promise<{ url: string; requests: () => number; server: Server; sockets: Set<Socket> }> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server = createServer((req) => {
    req.resume();
    req.on('end', () => { count += 1; });
  });
  server.on('connection', (socket) => { sockets.add(socket); socket.on('close', () => sockets.delete(socket)); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests: () => count, server, sockets };
}

/** A vendor whose streams break at once: the 200 and the SSE headers, then the connection is cut before any event. */
async function startCuttingUpstream(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'x-refusing-region': 'eu-secret-region-7' });
      res.flushHeaders();
      setTimeout(() => { res.socket?.destroy(); }, 20);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

/** The three deployments of a model, as the admin sends them (the model's own upstream first, as `primary`). */
function deploymentsOf(refusingUrl: string, hangingUrl: string, healthyUrl: string): configV1.UpstreamDeployment[] {
  const deployment = (name: string, url: string, priority: number, cost: { input: bigint; output: bigint }) => gatewayDeployment(name, url, {
    priority, providerInputCostMicrosPerMtok: cost.input, providerOutputCostMicrosPerMtok: cost.output,
  });
  return [deployment('primary', refusingUrl, 0, costs.primary), deployment('slow', hangingUrl, 1, costs.slow), deployment('healthy', healthyUrl, 2, costs.healthy)];
}

let world: ProxyWorld;
let proxy: TestProxy;
let client: OpenAI;
let refusing: Awaited<ReturnType<typeof startRefusingUpstream>>;
let hanging: Awaited<ReturnType<typeof startHangingUpstream>>;
let toolsPrimary: FakeUpstream;
let cutting: Awaited<ReturnType<typeof startCuttingUpstream>>;
/** Every header and body the client got, to search for the failing vendors' secrets at the end. */
const seen: string[] = [];

beforeAll(async () => {
  refusing = await startRefusingUpstream();
  hanging = await startHangingUpstream();
  toolsPrimary = await startFakeUpstream({ requiredApiKey: credential });
  cutting = await startCuttingUpstream();
  world = await startProxyWorld((healthyUrl) => stateOf([acme], [
    gatewayModel('chat', refusing.url, { deployments: deploymentsOf(refusing.url, hanging.url, healthyUrl) }),
    gatewayModel('embed', refusing.url, { kind: 'embedding', deployments: deploymentsOf(refusing.url, hanging.url, healthyUrl) }),
    gatewayModel('cutting', cutting.url, {
      deployments: [
        gatewayDeployment('primary', cutting.url, { providerInputCostMicrosPerMtok: costs.slow.input, providerOutputCostMicrosPerMtok: costs.slow.output }),
        gatewayDeployment('backup', healthyUrl, { priority: 1, providerInputCostMicrosPerMtok: costs.healthy.input, providerOutputCostMicrosPerMtok: costs.healthy.output }),
      ],
    }),
    gatewayModel('tools', toolsPrimary.baseUrl, {
      deployments: [
        gatewayDeployment('primary', toolsPrimary.baseUrl),
        gatewayDeployment('backup', healthyUrl, { priority: 1, providerInputCostMicrosPerMtok: costs.healthy.input, providerOutputCostMicrosPerMtok: costs.healthy.output }),
      ],
    }),
  ]), { requiredApiKey: credential });
  world.ledger.credit('acme', 1_000_000_000n);
  proxy = await world.startProxy({
    PROXY_ROUTING_ATTEMPT_TIMEOUT_MS: '300', PROXY_ROUTING_DEADLINE_MS: '10000', PROXY_ROUTING_MAX_ATTEMPTS: '3',
    PROXY_OUTLIER_CONSECUTIVE_FAILURES: '2', PROXY_OUTLIER_BASE_EJECTION_MS: '1500', PROXY_OUTLIER_MAX_EJECTION_MS: '3000',
  });
  await waitFor(() => proxy.isReady(), 5000, 'first snapshot');
  client = world.client(acme.apiKey);
});
afterAll(async () => {
  await world?.close();
  for (const socket of hanging?.sockets ?? []) socket.destroy();
  await Promise.all([refusing, hanging, cutting].map((upstream) => upstream === undefined ? undefined : new Promise((resolve) => upstream.server.close(resolve))));
  await toolsPrimary?.close();
});

/** Sends a chat request with fetch, keeping its headers and body for the concealment check. */
async function chat(body: Record<string, unknown>, model = 'chat'): Promise<{ status: number; text: string }> {
  const response = await fetch(`${proxy.baseUrl}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'say something [[fake:reply_words=5]]' }], ...body }),
  });
  const text = await response.text();
  seen.push(JSON.stringify([...response.headers]), text);
  return { status: response.status, text };
}

/** Scrapes the proxy's metrics. */
async function scrape(): Promise<PrometheusSample[]> {
  return parsePrometheusText(await (await fetch(`http://127.0.0.1:${proxy.ports.metrics}/metrics`)).text());
}

/** The value of one series (0 when absent). */
function valueOf(samples: PrometheusSample[], name: string, labels: Record<string, string>): number {
  const sample = samples.find((candidate) => candidate.name === name && Object.entries(labels).every(([key, value]) => candidate.labels[key] === value));
  return sample?.value ?? 0;
}

/** The Settle of a request answered by `healthy` after `primary` refused and `slow` timed out. */
async function expectHealthyAnswerAfterFailover(usage: { promptTokens: number; completionTokens: number }): Promise<ledgerV1.SettleRequest> {
  const settle = await lastSettleOf(world);
  const { promptTokens, completionTokens } = usage;
  expect(settle).toMatchObject({
    deployment: 'healthy', inputTokens: BigInt(promptTokens), outputTokens: BigInt(completionTokens),
    // The slug's price, whichever deployment answered...
    costMicros: expectedCostMicros(promptTokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(completionTokens, testPrices.outputPriceMicrosPerMtok),
    // ...and the provider cost of the one that did.
    providerCostMicros: expectedCostMicros(promptTokens, costs.healthy.input) + expectedCostMicros(completionTokens, costs.healthy.output),
  });
  // The refusal (an error status: its provider bills nothing) is not recorded; the timeout after sending is, at slow's costs.
  expect(settle.failedAttempts).toHaveLength(1);
  const [failed] = settle.failedAttempts;
  expect(failed).toMatchObject({ attempt: 2, deployment: 'slow', outcome: 'timeout', outputTokens: 0n });
  expect(failed!.inputTokens).toBeGreaterThan(0n);
  expect(failed!.providerCostMicros).toBe(expectedCostMicros(Number(failed!.inputTokens), costs.slow.input));
  // One Reserve, one Settle for the request.
  expect(world.ledger.calls.settle.filter((other) => other.reservationId === settle.reservationId)).toHaveLength(1);
  return settle;
}

describe('routing across three deployments of one slug', () => {
  it('answers a non-streaming completion through the healthy deployment, billed once at the slug price with its provider cost', async () => {
    const reserves = world.ledger.calls.reserve.length;
    const { status, text } = await chat({});
    expect(status).toBe(200);
    const body = JSON.parse(text) as { model: string; choices: Array<{ message: { content: string } }>; usage: { prompt_tokens: number; completion_tokens: number } };
    expect(body.model).toBe('chat');
    expect(body.choices[0]!.message.content).toBe('w1 w2 w3 w4 w5');
    expect(world.ledger.calls.reserve.length).toBe(reserves + 1);
    await expectHealthyAnswerAfterFailover({ promptTokens: body.usage.prompt_tokens, completionTokens: body.usage.completion_tokens });
    expect(refusing.requests()).toBe(1);
    await waitFor(() => hanging.requests() === 1, 5000, 'the hanging upstream to have the request');
  });

  it('streams through the healthy deployment after the same failures, nothing of them written to the client', async () => {
    const { status, text } = await chat({ stream: true, stream_options: { include_usage: true } });
    expect(status).toBe(200);
    const chunks = text.split('\n\n').filter((frame) => frame.startsWith('data: {')).map((frame) => JSON.parse(frame.slice(6)) as {
      choices: Array<{ delta: { content?: string } }>; usage?: { prompt_tokens: number; completion_tokens: number } | null;
    });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('w1 w2 w3 w4 w5');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const usage = chunks.at(-1)!.usage!;
    await expectHealthyAnswerAfterFailover({ promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens });
    expect(refusing.requests()).toBe(2);
  });

  it('serves embeddings the same way (another slug: its deployments have their own health)', async () => {
    const response = await fetch(`${proxy.baseUrl}/embeddings`, {
      method: 'POST', headers: { authorization: `Bearer ${acme.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'embed', input: 'one two three', encoding_format: 'float' }),
    });
    const text = await response.text();
    seen.push(JSON.stringify([...response.headers]), text);
    expect(response.status).toBe(200);
    const body = JSON.parse(text) as { model: string; data: unknown[]; usage: { prompt_tokens: number } };
    expect(body.model).toBe('embed');
    expect(body.data).toHaveLength(1);
    await expectHealthyAnswerAfterFailover({ promptTokens: body.usage.prompt_tokens, completionTokens: 0 });
  });

  it('ejects the failing deployments (two failures in a row) and sends the next request straight to the healthy one', async () => {
    const samples = await scrape();
    for (const deployment of ['primary', 'slow']) {
      expect(valueOf(samples, 'gateway_proxy_deployment_ejections_total', { model: 'chat', deployment })).toBe(1);
      expect(valueOf(samples, 'gateway_proxy_deployment_ejected', { model: 'chat', deployment })).toBe(1);
    }
    expect(valueOf(samples, 'gateway_proxy_deployment_ejected', { model: 'chat', deployment: 'healthy' })).toBe(0);
    expect(valueOf(samples, 'gateway_proxy_model_healthy_deployments', { model: 'chat' })).toBe(1);
    expect(valueOf(samples, 'gateway_proxy_deployment_attempts_total', { model: 'chat', deployment: 'primary', outcome: 'http_429' })).toBe(1);
    expect(valueOf(samples, 'gateway_proxy_deployment_attempts_total', { model: 'chat', deployment: 'primary', outcome: 'http_5xx' })).toBe(1);
    expect(valueOf(samples, 'gateway_proxy_deployment_attempts_total', { model: 'chat', deployment: 'slow', outcome: 'timeout' })).toBe(2);
    expect(valueOf(samples, 'gateway_proxy_failovers_total', { model: 'chat' })).toBe(4);

    const { status } = await chat({});
    expect(status).toBe(200);
    const settle = await lastSettleOf(world);
    expect(settle.deployment).toBe('healthy');
    expect(settle.failedAttempts).toEqual([]);
    expect(refusing.requests()).toBe(3); // the embeddings slug's attempt only
  });

  it('takes an ejected deployment back once its ejection ends (observed in the metrics)', async () => {
    let samples: PrometheusSample[] = [];
    const deadline = Date.now() + 10_000;
    for (;;) {
      samples = await scrape();
      if (valueOf(samples, 'gateway_proxy_deployment_ejected', { model: 'chat', deployment: 'primary' }) === 0) break;
      if (Date.now() > deadline) throw new Error('primary was not taken back');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(valueOf(samples, 'gateway_proxy_model_healthy_deployments', { model: 'chat' })).toBeGreaterThanOrEqual(2);
    const before = refusing.requests();
    const { status } = await chat({});
    expect(status).toBe(200);
    expect(refusing.requests()).toBe(before + 1); // tried again, refused again, failed over
    expect((await lastSettleOf(world)).deployment).toBe('healthy');
  });

  it('never lets a failing vendor\'s headers or texts reach the client', () => {
    const all = seen.join('\n');
    for (const secret of [...refusalSecrets, ...leakMarkers.all]) expect(all).not.toContain(secret);
    expect(all).not.toContain('slow');
    expect(all).not.toContain('upstream-name');
  });
});

describe('a stream that breaks before anything reached the client', () => {
  it('fails over to the next deployment, and records the broken attempt as provider cost', async () => {
    const { status, text } = await chat({ stream: true, stream_options: { include_usage: true } }, 'cutting');
    expect(status).toBe(200);
    const chunks = text.split('\n\n').filter((frame) => frame.startsWith('data: {')).map((frame) => JSON.parse(frame.slice(6)) as {
      choices: Array<{ delta: { content?: string } }>; usage?: { prompt_tokens: number; completion_tokens: number } | null;
    });
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')).toBe('w1 w2 w3 w4 w5');
    const usage = chunks.at(-1)!.usage!;
    const settle = await lastSettleOf(world);
    expect(settle).toMatchObject({
      deployment: 'backup',
      costMicros: expectedCostMicros(usage.prompt_tokens, testPrices.inputPriceMicrosPerMtok) + expectedCostMicros(usage.completion_tokens, testPrices.outputPriceMicrosPerMtok),
      providerCostMicros: expectedCostMicros(usage.prompt_tokens, costs.healthy.input) + expectedCostMicros(usage.completion_tokens, costs.healthy.output),
    });
    expect(settle.failedAttempts).toHaveLength(1);
    const [broken] = settle.failedAttempts;
    expect(broken).toMatchObject({ attempt: 1, deployment: 'primary', outcome: 'stream_broken', outputTokens: 0n });
    expect(broken!.providerCostMicros).toBe(expectedCostMicros(Number(broken!.inputTokens), costs.slow.input));
    const samples = await scrape();
    expect(valueOf(samples, 'gateway_proxy_deployment_attempts_total', { model: 'cutting', deployment: 'primary', outcome: 'stream_broken' })).toBe(1);
  });
});

describe('tool-call ids across deployments', () => {
  it('an id sealed from one deployment\'s answer works when the next turn goes to another', async () => {
    const first = await client.chat.completions.create({
      model: 'tools', messages: [{ role: 'user', content: 'look it up [[fake:tool_call=lookup]]' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }],
    });
    const call = first.choices[0]!.message.tool_calls![0]!;
    expect(call.id.startsWith('call_')).toBe(true);
    expect(call.id).not.toContain(leakMarkers.toolCallIdPrefix);
    expect((await lastSettleOf(world)).deployment).toBe('primary');

    // The first deployment is gone: the next turn fails over to `backup`, which gets the upstream's own id back.
    await toolsPrimary.close();
    const backupRequests = world.upstream.requests.length;
    const second = await client.chat.completions.create({
      model: 'tools',
      messages: [
        { role: 'user', content: 'look it up [[fake:tool_call=lookup]]' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'found it' },
      ],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { query: { type: 'string' } } } } }],
    });
    expect(second.choices[0]!.message.content).toBeTruthy();
    const forwarded = world.upstream.requests.slice(backupRequests).at(-1)!.body as { messages: Array<{ tool_calls?: Array<{ id: string }>; tool_call_id?: string }> };
    expect(forwarded.messages[1]!.tool_calls![0]!.id).toBe(`${leakMarkers.toolCallIdPrefix}1`);
    expect(forwarded.messages[2]!.tool_call_id).toBe(`${leakMarkers.toolCallIdPrefix}1`);
    const settle = await lastSettleOf(world);
    expect(settle.deployment).toBe('backup');
    // A refused connection sent nothing: no failed attempt to record.
    expect(settle.failedAttempts).toEqual([]);
  });
});
