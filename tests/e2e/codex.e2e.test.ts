/**
 * Codex CLI as released, headless, through the whole gateway: the pinned `@openai/codex` (root
 * package.json) runs `codex exec` against the proxy's `/v1/responses` (a `model_provider` with
 * `wire_api = "responses"`) with the gateway key, once on an OpenAI-compatible model and once on an
 * Anthropic-backed one, each behind a fake upstream. The fake answers the first turn with a call of
 * Codex's own shell tool (`exec_command`) that reads a file of a temp folder; Codex runs it and
 * sends the output back as a `function_call_output`, and the fake answers that with text: a tool
 * round trip, streamed (Codex always streams). The money is asserted to the µ₹: one usage record
 * per upstream call, priced from the tokens the fake counted on what it received, and the balance
 * down by exactly their sum.
 *
 * What Codex sends is captured as it sends it: a loopback proxy between Codex and the gateway keeps
 * every request body, and the test asserts on those, never on a hand-written shape. The config is
 * the one docs/surfaces/responses.md ("Codex CLI") gives users (reasoning summaries and web search
 * off: see there why; its sub-agent tools, a `namespace` tool, are served), so a release that starts
 * sending something new fails here, not in a user's terminal.
 *
 * Nothing leaves loopback: CODEX_HOME and HOME are temp folders, the config turns analytics,
 * feedback and update checks off, there is no login (the key comes from an env variable the
 * provider names), and the only provider is the gateway. A missing or mismatched binary fails the
 * test (never a skip): `pnpm agents:bump` relies on it.
 */
import { execFile } from 'node:child_process';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, fakePromptTokens, startFakeUpstream, type FakeUpstream, type RecordedRequest } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const codexBinary = join(repoRoot, 'node_modules', '.bin', 'codex');

/** The version of Codex the root package.json pins (exact). */
async function pinnedVersion(): Promise<string> {
  const manifest = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  return manifest.devDependencies['@openai/codex']!;
}

/** Runs the binary with stdin closed (codex exec reads extra input from an open stdin); resolves with its exit code and output. */
function run(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(codexBinary, args, { env, cwd, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
    child.stdin?.end();
  });
}

/** A request Codex sent to the gateway, as it sent it. */
interface CapturedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, any> | undefined;
}

/** A loopback proxy in front of the gateway's proxy that keeps every request body Codex sends and relays the answer as it streams. */
async function startCaptureProxy(target: URL): Promise<{ baseUrl: string; captured: CapturedRequest[]; close(): Promise<void> }> {
  const captured: CapturedRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let body: Record<string, any> | undefined;
      try { body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) as Record<string, any> : undefined; } catch { body = undefined; }
      captured.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body });
      const headers = { ...req.headers, host: target.host, 'content-length': String(raw.length) };
      const upstream = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => { res.writeHead(502).end(); });
      upstream.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('capture proxy has no port');
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    captured,
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

/**
 * Codex's config.toml for the gateway: the provider (Responses wire API, key from an env variable,
 * no retries so a refusal shows at once), and everything that phones home or that the gateway
 * cannot serve faithfully switched off (docs/surfaces/responses.md, "Codex CLI").
 */
function codexConfig(baseUrl: string, slug: string): string {
  return [
    `model = "${slug}"`,
    'model_provider = "gateway"',
    // The gateway model has no reasoning controls in this branch; a summary request is the REASONING owner's to serve.
    'model_reasoning_summary = "none"',
    // Hosted web search runs on OpenAI's side: no upstream of the gateway has it (docs/surfaces/responses.md, "Codex's tools").
    'web_search = "disabled"',
    'check_for_update_on_startup = false',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    '',
    '[model_providers.gateway]',
    'name = "INR gateway"',
    `base_url = "${baseUrl}/v1"`,
    'env_key = "GATEWAY_API_KEY"',
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[feedback]',
    'enabled = false',
    '',
  ].join('\n');
}

describe('Codex as released, headless through the gateway', () => {
  let gateway: E2eGateway;
  let anthropicUpstream: FakeUpstream;
  let capture: Awaited<ReturnType<typeof startCaptureProxy>>;
  let home: string;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;
  const openaiSlug = 'e2e-codex-openai';
  const claudeSlug = 'e2e-codex-anthropic';

  beforeAll(async () => {
    if (!serverUrl) throw new Error('Codex end to end needs PostgreSQL (TEST_DATABASE_URL)');
    home = await mkdtemp(join(tmpdir(), 'codex-e2e-'));
    gateway = await startE2eGateway({ serverUrl });
    anthropicUpstream = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    capture = await startCaptureProxy(new URL(gateway.proxyBases[0]!));
    // Codex's prompt (instructions, tool definitions) is thousands of tokens.
    const model = (slug: string, upstream: Record<string, string>) => gateway.admin('POST', '/gateway-models', {
      slug, display_name: slug, default_max_tokens: 64, max_context_tokens: 200_000,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream,
    });
    await model(openaiSlug, { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'upstream-codex-model', api_key: gateway.upstreamCredential });
    await model(claudeSlug, { provider_kind: 'anthropic', base_url: anthropicUpstream.baseUrl, model: 'claude-codex-model', api_key: anthropicCredential });
    // Returns once the proxy acknowledged the version that lets the organisation use the models.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, openaiSlug, claudeSlug] });
  }, 120_000);

  afterAll(async () => {
    await capture?.close();
    await gateway?.close();
    await anthropicUpstream?.close();
    if (home !== undefined) await rm(home, { recursive: true, force: true });
  });

  it('the pinned release is installed: `codex --version` is the version package.json pins', async () => {
    const pinned = await pinnedVersion();
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    const { code, stdout, stderr } = await run(['--version'], { PATH: process.env.PATH ?? '', HOME: home, CODEX_HOME: join(home, 'version-check') }, home);
    expect({ code, stderr: stderr.slice(0, 500) }).toMatchObject({ code: 0 });
    expect(stdout.trim()).toBe(`codex-cli ${pinned}`);
  });

  for (const kind of ['openai_compatible', 'anthropic'] as const) {
    it(`codex exec runs a shell command through a ${kind} model, streamed, and the ledger charges exactly the priced usage`, async () => {
      const slug = kind === 'anthropic' ? claudeSlug : openaiSlug;
      const upstream = kind === 'anthropic' ? anthropicUpstream : gateway.upstream;
      const codexHome = join(home, `codex-${kind}`);
      await mkdir(codexHome, { recursive: true });
      await writeFile(join(codexHome, 'config.toml'), codexConfig(capture.baseUrl, slug));
      const work = await mkdtemp(join(home, `work-${kind}-`));
      await writeFile(join(work, 'note.txt'), 'The answer is 42.\n');
      const before = await gateway.settledBalance();
      const calls = upstream.requests.length;
      const sent = capture.captured.length;

      const prompt = 'Print note.txt and tell me the answer. [[fake:tool_call=exec_command]] [[fake:tool_arg=cmd:cat note.txt]] [[fake:reply_words=4]]';
      const { code, stdout, stderr } = await run(
        ['exec', '--json', '--skip-git-repo-check', '--color', 'never', prompt],
        { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: codexHome, GATEWAY_API_KEY: gateway.apiKey },
        work,
      );
      expect({ code, stderr: stderr.slice(-3000) }, stdout.slice(0, 3000)).toMatchObject({ code: 0 });
      const events = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, any>);
      expect(events.filter((event) => event.type === 'error' || event.type === 'turn.failed')).toEqual([]);
      // Codex ran the command the model asked for, in the work folder, and got the file's content.
      const command = events.find((event) => event.type === 'item.completed' && event.item?.type === 'command_execution')?.item as Record<string, any> | undefined;
      expect(command, stdout.slice(0, 3000)).toMatchObject({ command: expect.stringContaining('cat note.txt'), exit_code: 0 });
      expect(command!.aggregated_output).toContain('The answer is 42.');
      const message = events.findLast((event) => event.type === 'item.completed' && event.item?.type === 'agent_message')?.item as Record<string, any> | undefined;
      // The Anthropic fake reads its directives from the last user turn, which is now the tool result, so it answers in its own words.
      if (kind === 'openai_compatible') expect(message?.text).toBe('w1 w2 w3 w4');
      expect((message?.text as string | undefined)?.length).toBeGreaterThan(0);

      // What Codex sent: two streamed Responses requests, the second handing the command's output back under the call's id.
      const requests = capture.captured.slice(sent);
      expect(requests.map((request) => [request.method, request.path, request.body?.stream])).toEqual([['POST', '/v1/responses', true], ['POST', '/v1/responses', true]]);
      const [turn1, turn2] = requests.map((request) => request.body!);
      // Its tools: functions, and its sub-agent tools as a namespace (no hosted web_search: the config turns it off).
      const sentTools = turn1!.tools as Array<{ type: string; name: string; tools?: Array<{ name: string }> }>;
      expect(new Set(sentTools.map((tool) => tool.type))).toEqual(new Set(['function', 'namespace']));
      expect(sentTools.map((tool) => tool.name)).toContain('exec_command');
      const namespace = sentTools.find((tool) => tool.type === 'namespace')!;
      expect(turn1).toMatchObject({ model: slug, store: false, tool_choice: 'auto', parallel_tool_calls: true, client_metadata: expect.any(Object) });
      const call = (turn2!.input as Array<Record<string, any>>).find((item) => item.type === 'function_call');
      const output = (turn2!.input as Array<Record<string, any>>).find((item) => item.type === 'function_call_output');
      expect(call).toMatchObject({ name: 'exec_command', arguments: JSON.stringify({ cmd: 'cat note.txt' }) });
      expect(output?.call_id).toBe(call!.call_id);
      expect(JSON.stringify(output!.output)).toContain('The answer is 42.');

      // Two upstream calls, both streamed: the tool call, then the answer to the command's output.
      const received: RecordedRequest[] = upstream.requests.slice(calls);
      expect(received.map((request) => [request.path, (request.body as Record<string, unknown>).stream])).toEqual(
        kind === 'anthropic' ? [['/v1/messages', true], ['/v1/messages', true]] : [['/v1/chat/completions', true], ['/v1/chat/completions', true]],
      );
      const [first, second] = received.map((request) => request.body as Record<string, any>);
      expect(JSON.stringify(second!.messages)).toContain('The answer is 42.');
      // The namespace's functions reached the upstream as <namespace>__<name> functions, beside the top-level ones.
      const upstreamToolNames = (first!.tools as Array<Record<string, any>>).map((tool) => (kind === 'anthropic' ? tool.name : tool.function.name) as string);
      expect(upstreamToolNames).toEqual(expect.arrayContaining(['exec_command', ...namespace.tools!.map((tool) => `${namespace.name}__${tool.name}`)]));
      expect(upstreamToolNames).toHaveLength(sentTools.reduce((count, tool) => count + (tool.tools?.length ?? 1), 0));
      // Codex's session metadata (ids, workspace paths) never reaches the upstream.
      for (const body of [first!, second!]) {
        expect(JSON.stringify(body)).not.toContain(turn1!.client_metadata.session_id as string);
      }

      // Money: one record per upstream call, each the e2e prices of the tokens the fake counted, to the µ₹.
      const promptTokensOf = (body: Record<string, any>) => fakePromptTokens(body.messages)
        + (typeof body.system === 'string' ? countWords(body.system) + 3 : 0);
      const toolArguments = JSON.stringify({ cmd: 'cat note.txt' });
      const expectedTokens = [
        { input: promptTokensOf(first!), output: Math.ceil(toolArguments.length / 8) },
        { input: promptTokensOf(second!), output: countWords(message!.text as string) },
      ];
      const after = await gateway.settledBalance();
      const usage = await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage`);
      const records = (usage.data as Array<Record<string, any>>).filter((record) => record.model === slug);
      const expectedMicros = expectedTokens.map(({ input, output }) => e2eCostMicros(input, output));
      expect(records.map((record) => [record.input_tokens, record.output_tokens, record.cost_micros, record.usage_source]).sort())
        .toEqual(expectedTokens.map(({ input, output }, index) => [input, output, expectedMicros[index]!.toString(), 'upstream']).sort());
      const total = expectedMicros.reduce((sum, micros) => sum + micros, 0n);
      // Codex's own turn total is the sum of what each response's usage said, which is what was billed.
      const turn = events.find((event) => event.type === 'turn.completed') as Record<string, any> | undefined;
      expect(turn?.usage).toMatchObject({
        input_tokens: expectedTokens[0]!.input + expectedTokens[1]!.input,
        output_tokens: expectedTokens[0]!.output + expectedTokens[1]!.output,
      });
      expect(after.held_micros).toBe('0');
      expect(BigInt(before.available_micros as string) - BigInt(after.available_micros as string)).toBe(total);
      expect(BigInt(after.debited_micros as string) - BigInt(before.debited_micros as string)).toBe(total);
      console.info(`codex e2e (${kind}): tokens ${JSON.stringify(expectedTokens)}, charged ${expectedMicros.join(' + ')} = ${total} µ₹`);
    }, 90_000);
  }
});
