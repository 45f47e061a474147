/**
 * Claude Code as released, headless, through the whole gateway: the pinned `@anthropic-ai/claude-code`
 * (root package.json) runs `claude -p` against the proxy's `/v1/messages` with the gateway key, once
 * on an OpenAI-compatible model and once on an Anthropic-backed one, each behind a fake upstream,
 * and once more on the Anthropic-backed one with no ANTHROPIC_*_MODEL variable at all: its built-in
 * model names reach the model through platform aliases (docs/model-aliases.md).
 * The fake answers the first turn with a call of Claude Code's own Read tool on a file of a temp
 * folder, Claude Code reads it and sends the result back, and the fake answers that with text: a
 * tool round trip, streamed (Claude Code always streams). The money is asserted to the µ₹: one
 * usage record per upstream call, priced from the tokens the fake counted on what it received,
 * and the balance down by exactly their sum.
 *
 * Nothing leaves loopback: Claude Code's telemetry, error reports, update checks and other
 * non-essential traffic are switched off by its documented variables, and HOME is a temp folder;
 * it runs with an egress trap as its HTTP(S) proxy, and each run asserts nothing tried to leave.
 * A missing or mismatched binary fails the test (never a skip): `pnpm agents:bump` relies on it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, fakePromptTokens, startFakeUpstream, type FakeUpstream, type RecordedRequest } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { agentBuiltInModelNames } from '@gateway/admin';
import { startCaptureProxy, startEgressTrap } from '../support/capture-proxy.ts';
import { e2eCostMicros, e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const claudeBinary = join(repoRoot, 'node_modules', '.bin', 'claude');

/** The version of Claude Code the root package.json pins (exact). */
async function pinnedVersion(): Promise<string> {
  const manifest = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  return manifest.devDependencies['@anthropic-ai/claude-code']!;
}

/**
 * Every top-level field Claude Code 2.1.332 sends to /v1/messages, and every key of its tools, each
 * served, refused or (for `thinking`, `output_config.effort` and `cache_control`, which other work
 * owns) accepted as docs/surfaces/messages.md says. A release that sends another fails the test, so
 * that a field the gateway would drop unread is looked at with the bump, not found by a user.
 */
const knownClaudeFields = new Set([
  'model', 'messages', 'system', 'tools', 'tool_choice', 'metadata', 'max_tokens', 'thinking', 'context_management', 'output_config',
  'stream', 'temperature',
]);
const knownClaudeToolKeys = new Set(['name', 'description', 'input_schema', 'defer_loading', 'cache_control']);

/** Runs the binary; resolves with its exit code and output, whatever the code. */
function run(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(claudeBinary, args, { env, cwd, timeout: 45_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/**
 * Claude Code's environment: the gateway as its Anthropic API, the model slug for every model it
 * would pick (none: its built-in names, which reach a gateway model through aliases), and
 * everything that phones home switched off (as its documentation names them).
 */
function claudeEnv(home: string, baseUrl: string, apiKey: string, slug: string | undefined): Record<string, string> {
  const models: Record<string, string> = slug === undefined ? {} : {
    ANTHROPIC_MODEL: slug,
    ANTHROPIC_SMALL_FAST_MODEL: slug,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: slug,
    ANTHROPIC_DEFAULT_SONNET_MODEL: slug,
    ANTHROPIC_DEFAULT_OPUS_MODEL: slug,
  };
  return {
    ...models,
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    CLAUDE_CONFIG_DIR: join(home, '.claude'),
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: apiKey,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_BUG_COMMAND: '1',
    DISABLE_NON_ESSENTIAL_MODEL_CALLS: '1',
    CLAUDE_CODE_ENABLE_TELEMETRY: '0',
  };
}

describe('Claude Code as released, headless through the gateway', () => {
  let gateway: E2eGateway;
  let anthropicUpstream: FakeUpstream;
  let home: string;
  let capture: Awaited<ReturnType<typeof startCaptureProxy>>;
  let egress: Awaited<ReturnType<typeof startEgressTrap>>;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;
  const openaiSlug = 'e2e-claude-code-openai';
  const claudeSlug = 'e2e-claude-code-anthropic';

  beforeAll(async () => {
    if (!serverUrl) throw new Error('Claude Code end to end needs PostgreSQL (TEST_DATABASE_URL)');
    home = await mkdtemp(join(tmpdir(), 'claude-code-e2e-'));
    gateway = await startE2eGateway({ serverUrl });
    anthropicUpstream = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    capture = await startCaptureProxy(new URL(gateway.proxyBases[0]!));
    egress = await startEgressTrap();
    // Claude Code's prompt (system prompt, tool definitions) is tens of thousands of tokens.
    const model = (slug: string, upstream: Record<string, string>, controls: Record<string, unknown> = {}) => gateway.admin('POST', '/gateway-models', {
      slug, display_name: slug, default_max_tokens: 64, max_context_tokens: 200_000,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      upstream, ...controls,
    });
    await model(openaiSlug, { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: 'upstream-cc-model', api_key: gateway.upstreamCredential });
    // A Claude model takes an effort: with its built-in names Claude Code sends `output_config.effort: "medium"`,
    // which a model without reasoning controls refuses (docs/surfaces/reasoning.md). No thinking modes here, so
    // its adaptive thinking is accepted unforwarded and the replies carry none (claude-code-thinking.e2e covers thinking).
    await model(claudeSlug, { provider_kind: 'anthropic', base_url: anthropicUpstream.baseUrl, model: 'claude-cc-model', api_key: anthropicCredential }, {
      reasoning_efforts: ['low', 'medium', 'high', 'max'],
    });
    // Returns once the proxy acknowledged the version that lets the organisation use the models.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, openaiSlug, claudeSlug] });
  }, 120_000);

  afterAll(async () => {
    await capture?.close();
    await egress?.close();
    await gateway?.close();
    await anthropicUpstream?.close();
    if (home !== undefined) await rm(home, { recursive: true, force: true });
  });

  it('the pinned release is installed: `claude --version` is the version package.json pins', async () => {
    const pinned = await pinnedVersion();
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    const { code, stdout, stderr } = await run(['--version'], { PATH: process.env.PATH ?? '', HOME: home, DISABLE_AUTOUPDATER: '1' }, home);
    expect({ code, stderr: stderr.slice(0, 500) }).toEqual({ code: 0, stderr: '' });
    expect(stdout.trim()).toBe(`${pinned} (Claude Code)`);
  });

  for (const [kind, modelVariables] of [['openai_compatible', true], ['anthropic', true], ['anthropic', false]] as const) {
    const how = modelVariables ? 'with ANTHROPIC_*_MODEL set to the slug' : 'with NO model variables (its built-in names reach the model through platform aliases)';
    it(`claude -p reads a file with its Read tool through a ${kind} model ${how}, streamed, and the ledger charges exactly the priced usage`, async () => {
      const slug = kind === 'anthropic' ? claudeSlug : openaiSlug;
      if (!modelVariables) {
        // As the platform admin would: every built-in name of the pinned release reaches the model.
        for (const name of agentBuiltInModelNames.claudeCode) await gateway.admin('PUT', `/model-aliases/${name}`, { gateway_model: slug });
      }
      const upstream = kind === 'anthropic' ? anthropicUpstream : gateway.upstream;
      const work = await mkdtemp(join(home, `work-${kind}-`));
      const file = join(work, 'note.txt');
      await writeFile(file, 'The answer is 42.\n');
      const before = await gateway.settledBalance();
      const calls = upstream.requests.length;
      const sent = capture.captured.length;

      const prompt = `Read note.txt and tell me the answer. [[fake:tool_call=Read]] [[fake:tool_arg=file_path:${file}]] [[fake:reply_words=4]]`;
      // Through the capture proxy, which keeps what Claude Code sends before the gateway reads it.
      const baseUrl = capture.baseUrl;
      const { code, stdout, stderr } = await run(
        ['-p', prompt, '--output-format', 'json', '--max-turns', '4', '--allowedTools', 'Read'],
        { ...claudeEnv(home, baseUrl, gateway.apiKey, modelVariables ? slug : undefined), ...egress.proxyEnv }, work,
      );
      expect({ code, stderr: stderr.slice(0, 2000) }, stdout.slice(0, 2000)).toMatchObject({ code: 0 });
      expect(egress.attempts, 'traffic beyond loopback').toEqual([]);
      const result = JSON.parse(stdout) as Record<string, any>;
      expect(result).toMatchObject({ type: 'result', subtype: 'success', is_error: false, num_turns: 2 });

      // What Claude Code sent: only fields and tool keys the Messages surface says what it does with.
      const sentBodies = capture.captured.slice(sent).filter((request) => request.path.startsWith('/v1/messages')).map((request) => request.body!);
      expect(sentBodies.length).toBeGreaterThanOrEqual(2);
      for (const body of sentBodies) {
        expect(Object.keys(body).filter((field) => !knownClaudeFields.has(field))).toEqual([]);
        const toolKeys = (body.tools as Array<Record<string, unknown>> | undefined ?? []).flatMap((tool) => Object.keys(tool));
        expect([...new Set(toolKeys)].filter((key) => !knownClaudeToolKeys.has(key))).toEqual([]);
      }

      // Two upstream calls, both streamed: the tool call, then the answer to the file's content.
      const received: RecordedRequest[] = upstream.requests.slice(calls);
      if (!modelVariables) {
        // It asked for its own default name; the upstream saw the slug's upstream model, never that name.
        const asked = received.map((request) => (request.body as Record<string, unknown>).model);
        expect(new Set(asked)).toEqual(new Set(['claude-cc-model']));
      }
      expect(received.map((request) => [request.path, (request.body as Record<string, unknown>).stream])).toEqual(
        kind === 'anthropic' ? [['/v1/messages', true], ['/v1/messages', true]] : [['/v1/chat/completions', true], ['/v1/chat/completions', true]],
      );
      const [first, second] = received.map((request) => request.body as Record<string, any>);
      // Claude Code's environment block (a system message inside messages) reached the model as a system instruction.
      // Its cache_control breakpoints keep system prompts as blocks (or parts) with them: read the texts either way.
      const textOf = (content: unknown): string => (typeof content === 'string' ? content
        : Array.isArray(content) ? content.map((block: { text?: string }) => block.text ?? '').join('\n\n') : '');
      if (kind === 'anthropic') {
        expect(textOf(first!.system)).toContain('# Environment');
        expect(first!.messages.some((message: { role: string }) => message.role === 'system')).toBe(false);
        expect((first!.system as Array<{ cache_control?: unknown }>).some((block) => block.cache_control !== undefined)).toBe(true);
      } else {
        const systemTexts = first!.messages.filter((message: { role: string }) => message.role === 'system').map((message: { content: unknown }) => textOf(message.content));
        expect(systemTexts.some((text: string) => text.includes('# Environment'))).toBe(true);
      }
      expect(JSON.stringify(second!.messages)).toContain('The answer is 42.');
      // Its deferred tool (defer_loading) is left out, as Anthropic leaves it out of the prompt; Read is sent.
      const toolNames = (first!.tools as Array<Record<string, any>>).map((tool) => (kind === 'anthropic' ? tool.name : tool.function.name) as string);
      expect(toolNames).toContain('Read');
      expect(toolNames).not.toContain('DeferredToolPlaceholder');
      const answer = result.result as string;
      expect(answer.length).toBeGreaterThan(0);

      // Money: one record per upstream call, each the e2e prices of the tokens the fake counted, to the µ₹.
      // The fake counts a system prompt, string or blocks, as its words + 3 (the blocks include the organisation's cache-scope marker).
      const promptTokensOf = (body: Record<string, any>) => fakePromptTokens(body.messages)
        + (body.system === undefined ? 0 : countWords(textOf(body.system)) + 3);
      const toolArguments = JSON.stringify({ file_path: file });
      const expectedTokens = [
        { input: promptTokensOf(first!), output: Math.ceil(toolArguments.length / 8) },
        { input: promptTokensOf(second!), output: countWords(answer) },
      ];
      if (kind === 'openai_compatible') expect(answer).toBe('w1 w2 w3 w4');
      const after = await gateway.settledBalance();
      const usage = await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage`);
      // Newest first: this run's two records are the slug's latest.
      const records = (usage.data as Array<Record<string, any>>).filter((record) => record.model === slug).slice(0, 2);
      const expectedMicros = expectedTokens.map(({ input, output }) => e2eCostMicros(input, output));
      expect(records.map((record) => [record.input_tokens, record.output_tokens, record.cost_micros, record.usage_source]).sort())
        .toEqual(expectedTokens.map(({ input, output }, index) => [input, output, expectedMicros[index]!.toString(), 'upstream']).sort());
      const total = expectedMicros.reduce((sum, micros) => sum + micros, 0n);
      expect(after.held_micros).toBe('0');
      expect(BigInt(before.available_micros as string) - BigInt(after.available_micros as string)).toBe(total);
      expect(BigInt(after.debited_micros as string) - BigInt(before.debited_micros as string)).toBe(total);
      if (!modelVariables) process.stdout.write(`claude-code e2e, no model variables: 2 calls as ${slug}, charged ${total} µ₹ (${expectedMicros.join(' + ')})\n`);
    }, 60_000);
  }
});
