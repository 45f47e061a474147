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
 * feedback, plugin sync and update checks off, there is no login (the key comes from an env
 * variable the provider names), and the only provider is the gateway. Codex runs with an egress
 * trap as its HTTP(S) proxy, and every run asserts that nothing tried to reach a host beyond loopback. A missing or mismatched binary fails the
 * test (never a skip): `pnpm agents:bump` relies on it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, fakePromptTokens, startFakeUpstream, type FakeUpstream, type RecordedRequest } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { startCaptureProxy, startEgressTrap } from '../support/capture-proxy.ts';
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

/**
 * Codex's config.toml for the gateway: the provider (Responses wire API, key from an env variable,
 * no retries so a refusal shows at once), and everything that phones home or that the gateway
 * cannot serve faithfully switched off (docs/surfaces/responses.md, "Codex CLI").
 */
function codexConfig(baseUrl: string, slug: string, options: { catalog?: string; sandbox?: 'read-only' | 'workspace-write' } = {}): string {
  return [
    `model = "${slug}"`,
    ...(options.catalog === undefined ? [] : [`model_catalog_json = "${options.catalog}"`]),
    'model_provider = "gateway"',
    // The gateway model has no reasoning controls in this branch; a summary request is the REASONING owner's to serve.
    'model_reasoning_summary = "none"',
    // Hosted web search runs on OpenAI's side: no upstream of the gateway has it (docs/surfaces/responses.md, "Codex's tools").
    'web_search = "disabled"',
    'check_for_update_on_startup = false',
    'approval_policy = "never"',
    `sandbox_mode = "${options.sandbox ?? 'read-only'}"`,
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
    // Codex syncs its curated plugins from github.com and chatgpt.com on every start unless plugins are off.
    '[features]',
    'plugins = false',
    '',
  ].join('\n');
}

/**
 * A model catalog (`model_catalog_json`) that tells Codex what a gateway model is, so it sends its
 * freeform `apply_patch` tool (a custom tool with a Lark grammar) as it does for OpenAI's own
 * models; without one Codex falls back to its generic metadata, which has no apply_patch tool.
 * Only the fields this release requires; no reasoning levels (the gateway model has none here).
 */
function codexCatalog(slug: string): string {
  return JSON.stringify({
    models: [{
      slug, display_name: slug, description: 'A gateway model', visibility: 'list', priority: 0, upgrade: null,
      minimal_client_version: '0.0.1', supported_in_api: true, base_instructions: 'You are a coding agent in the Codex CLI.',
      apply_patch_tool_type: 'freeform', shell_type: 'shell_command', experimental_supported_tools: [],
      supports_reasoning_summaries: false, default_reasoning_level: null, supported_reasoning_levels: [],
      support_verbosity: false, default_verbosity: null, supports_parallel_tool_calls: true,
      input_modalities: ['text'], truncation_policy: { mode: 'tokens', limit: 10_000 }, context_window: 200_000,
    }],
  });
}

/**
 * Every top-level field Codex 0.171.0 sends to /v1/responses, each served or refused field by field
 * in docs/surfaces/responses.md. A release that sends another fails the test, so that a field the
 * gateway would drop unread is looked at (and documented) with the bump, not found by a user.
 */
const knownCodexFields = new Set([
  'model', 'instructions', 'input', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'store', 'stream', 'include',
  'prompt_cache_key', 'client_metadata', 'text',
]);

/** codex exec --json's events (one JSON object a line). */
function jsonEvents(stdout: string): Array<Record<string, any>> {
  return stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, any>);
}

describe('Codex as released, headless through the gateway', () => {
  let gateway: E2eGateway;
  let anthropicUpstream: FakeUpstream;
  let capture: Awaited<ReturnType<typeof startCaptureProxy>>;
  let egress: Awaited<ReturnType<typeof startEgressTrap>>;
  let home: string;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;
  const openaiSlug = 'e2e-codex-openai';
  const claudeSlug = 'e2e-codex-anthropic';
  /** A model of its own for the apply_patch run, so its usage records are the run's alone. */
  const patchSlug = 'e2e-codex-patch';

  beforeAll(async () => {
    if (!serverUrl) throw new Error('Codex end to end needs PostgreSQL (TEST_DATABASE_URL)');
    home = await mkdtemp(join(tmpdir(), 'codex-e2e-'));
    gateway = await startE2eGateway({ serverUrl });
    anthropicUpstream = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    capture = await startCaptureProxy(new URL(gateway.proxyBases[0]!));
    egress = await startEgressTrap();
    // Codex's prompt (instructions, tool definitions) is thousands of tokens.
    const model = (slug: string, upstream: Record<string, string>) => gateway.admin('POST', '/gateway-models', {
      slug, display_name: slug, default_max_tokens: 64, max_context_tokens: 200_000,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream,
    });
    await model(openaiSlug, { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'upstream-codex-model', api_key: gateway.upstreamCredential });
    await model(claudeSlug, { provider_kind: 'anthropic', base_url: anthropicUpstream.baseUrl, model: 'claude-codex-model', api_key: anthropicCredential });
    await model(patchSlug, { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'upstream-codex-model', api_key: gateway.upstreamCredential });
    // Returns once the proxy acknowledged the version that lets the organisation use the models.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, openaiSlug, claudeSlug, patchSlug] });
  }, 120_000);

  afterAll(async () => {
    await capture?.close();
    await egress?.close();
    await gateway?.close();
    await anthropicUpstream?.close();
    if (home !== undefined) await rm(home, { recursive: true, force: true });
  });

  /** The Settles of one Codex run: one usage record per upstream call at the e2e prices, the balance down by their sum, Codex's own turn total the same tokens; returns the sum, µ₹. */
  async function expectCharged(slug: string, before: Record<string, any>, expectedTokens: Array<{ input: number; output: number }>, events: Array<Record<string, any>>): Promise<bigint> {
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
      input_tokens: expectedTokens.reduce((sum, tokens) => sum + tokens.input, 0),
      output_tokens: expectedTokens.reduce((sum, tokens) => sum + tokens.output, 0),
    });
    expect(after.held_micros).toBe('0');
    expect(BigInt(before.available_micros as string) - BigInt(after.available_micros as string)).toBe(total);
    expect(BigInt(after.debited_micros as string) - BigInt(before.debited_micros as string)).toBe(total);
    console.info(`codex e2e ${slug}: tokens ${JSON.stringify(expectedTokens)}, charged ${expectedMicros.join(' + ')} = ${total} µ₹`);
    return total;
  }

  /** The prompt tokens the fake upstream counted on a body it received (its system prompt too, for the Anthropic kind). */
  const promptTokensOf = (body: Record<string, any>) => fakePromptTokens(body.messages)
    + (typeof body.system === 'string' ? countWords(body.system) + 3 : 0);

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
        { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: codexHome, GATEWAY_API_KEY: gateway.apiKey, ...egress.proxyEnv },
        work,
      );
      expect({ code, stderr: stderr.slice(-3000) }, stdout.slice(0, 3000)).toMatchObject({ code: 0 });
      expect(egress.attempts, 'traffic beyond loopback').toEqual([]);
      const events = jsonEvents(stdout);
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
      for (const body of [turn1!, turn2!]) expect(Object.keys(body).filter((field) => !knownCodexFields.has(field))).toEqual([]);
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
      await expectCharged(slug, before, [
        { input: promptTokensOf(first!), output: Math.ceil(JSON.stringify({ cmd: 'cat note.txt' }).length / 8) },
        { input: promptTokensOf(second!), output: countWords(message!.text as string) },
      ], events);
    }, 90_000);
  }

  it('codex exec edits a file with its freeform apply_patch tool (a custom tool with a grammar): the call comes back as a custom_tool_call, Codex applies it and sends a custom_tool_call_output', async () => {
    const codexHome = join(home, 'codex-patch');
    await mkdir(codexHome, { recursive: true });
    const catalog = join(codexHome, 'models.json');
    await writeFile(catalog, codexCatalog(patchSlug));
    await writeFile(join(codexHome, 'config.toml'), codexConfig(capture.baseUrl, patchSlug, { catalog, sandbox: 'workspace-write' }));
    const work = await mkdtemp(join(home, 'work-patch-'));
    const before = await gateway.settledBalance();
    const calls = gateway.upstream.requests.length;
    const sent = capture.captured.length;

    const patch = '*** Begin Patch\n*** Add File: hello.txt\n+Hello from the gateway\n*** End Patch\n';
    const prompt = `Create hello.txt. [[fake:tool_call=apply_patch]] [[fake:tool_arg=input:${patch}]] [[fake:reply_words=3]]`;
    const { code, stdout, stderr } = await run(
      ['exec', '--json', '--skip-git-repo-check', '--color', 'never', prompt],
      { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CODEX_HOME: codexHome, GATEWAY_API_KEY: gateway.apiKey, ...egress.proxyEnv },
      work,
    );
    expect({ code, stderr: stderr.slice(-3000) }, stdout.slice(0, 3000)).toMatchObject({ code: 0 });
    expect(egress.attempts, 'traffic beyond loopback').toEqual([]);
    const events = jsonEvents(stdout);
    expect(events.filter((event) => event.type === 'error' || event.type === 'turn.failed')).toEqual([]);
    // The patch was applied: the file exists with the line the model wrote.
    expect(await readFile(join(work, 'hello.txt'), 'utf8')).toBe('Hello from the gateway\n');
    const message = events.findLast((event) => event.type === 'item.completed' && event.item?.type === 'agent_message')?.item as Record<string, any> | undefined;
    expect(message?.text).toBe('w1 w2 w3');

    // What Codex sent: its apply_patch as a custom tool with a Lark grammar, then the call and its output as custom items.
    const requests = capture.captured.slice(sent).map((request) => request.body!);
    expect(requests).toHaveLength(2);
    for (const body of requests) expect(Object.keys(body).filter((field) => !knownCodexFields.has(field))).toEqual([]);
    expect((requests[0]!.tools as Array<Record<string, any>>).find((tool) => tool.name === 'apply_patch'))
      .toMatchObject({ type: 'custom', format: { type: 'grammar', syntax: 'lark', definition: expect.stringContaining('begin_patch') } });
    const input = requests[1]!.input as Array<Record<string, any>>;
    const call = input.find((item) => item.type === 'custom_tool_call');
    expect(call).toMatchObject({ name: 'apply_patch', input: patch });
    expect(input.find((item) => item.type === 'custom_tool_call_output')?.call_id).toBe(call!.call_id);

    // Upstream, apply_patch was a function of one string `input`, its grammar in its description; the call went back as that function's.
    const received = gateway.upstream.requests.slice(calls).map((request) => request.body as Record<string, any>);
    expect(received).toHaveLength(2);
    const upstreamTool = (received[0]!.tools as Array<Record<string, any>>).find((tool) => tool.function.name === 'apply_patch');
    expect(upstreamTool!.function.parameters).toMatchObject({ type: 'object', required: ['input'], properties: { input: { type: 'string' } } });
    expect(upstreamTool!.function.description).toContain('Lark grammar accepts');
    const assistant = (received[1]!.messages as Array<Record<string, any>>).find((entry) => entry.role === 'assistant' && Array.isArray(entry.tool_calls));
    expect(assistant!.tool_calls[0].function).toEqual({ name: 'apply_patch', arguments: JSON.stringify({ input: patch }) });

    await expectCharged(patchSlug, before, [
      { input: promptTokensOf(received[0]!), output: Math.ceil(JSON.stringify({ input: patch }).length / 8) },
      { input: promptTokensOf(received[1]!), output: 3 },
    ], events);
  }, 90_000);
});
