/**
 * Claude Code as released, headless, on an Anthropic-backed model that takes thinking (adaptive,
 * with effort): what Claude Code sends on every request (`thinking: adaptive`, `output_config.effort`)
 * is forwarded, the fake upstream thinks before its tool call, the gateway returns the thinking
 * block with its signature sealed, and Claude Code's next turn sends it back, which the gateway
 * opens so that the fake upstream's signature check passes (a wrong one would be its 400 and the
 * run would fail). Money to the µ₹: the balance drops by exactly the priced usage records.
 * Nothing leaves loopback (the same switches as claude-code.e2e.test.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeThinkingSignature, startFakeUpstream, type FakeUpstream } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2eCostMicros, e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const claudeBinary = join(fileURLToPath(new URL('../../', import.meta.url)), 'node_modules', '.bin', 'claude');

/** Runs the binary; resolves with its exit code and output, whatever the code. */
function run(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(claudeBinary, args, { env, cwd, timeout: 45_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr });
    });
  });
}

/** Claude Code's environment: the gateway as its Anthropic API, the slug for every model, nothing phoning home. */
function claudeEnv(home: string, baseUrl: string, apiKey: string, slug: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, CLAUDE_CONFIG_DIR: join(home, '.claude'),
    ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: apiKey,
    ANTHROPIC_MODEL: slug, ANTHROPIC_SMALL_FAST_MODEL: slug, ANTHROPIC_DEFAULT_HAIKU_MODEL: slug, ANTHROPIC_DEFAULT_SONNET_MODEL: slug, ANTHROPIC_DEFAULT_OPUS_MODEL: slug,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', DISABLE_AUTOUPDATER: '1',
    DISABLE_BUG_COMMAND: '1', DISABLE_NON_ESSENTIAL_MODEL_CALLS: '1', CLAUDE_CODE_ENABLE_TELEMETRY: '0',
  };
}

describe.skipIf(!serverUrl)('Claude Code as released on a thinking model', () => {
  let gateway: E2eGateway;
  let anthropicUpstream: FakeUpstream;
  let home: string;
  const anthropicCredential = `sk-ant-${randomBytes(12).toString('hex')}`;
  const slug = 'e2e-claude-code-thinking';

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'claude-code-thinking-e2e-'));
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
    anthropicUpstream = await startFakeUpstream({ requiredApiKey: anthropicCredential, name: 'anthropic' });
    await gateway.admin('POST', '/gateway-models', {
      slug, default_max_tokens: 64, max_context_tokens: 200_000,
      input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(), output_price_micros_per_mtok: e2ePrices.outputPriceMicrosPerMtok.toString(),
      reasoning_efforts: ['low', 'medium', 'high', 'max'], thinking_modes: ['enabled', 'adaptive'], returns_reasoning: true,
      upstream: { provider_kind: 'anthropic', base_url: anthropicUpstream.baseUrl, model: 'claude-cc-thinker', api_key: anthropicCredential },
    });
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, slug] });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await anthropicUpstream?.close();
    if (home !== undefined) await rm(home, { recursive: true, force: true });
  });

  it('claude -p: its thinking request reaches the upstream, the signed thinking goes back with the tool result, and the ledger charges exactly the usage', async () => {
    const work = await mkdtemp(join(home, 'work-'));
    const file = join(work, 'note.txt');
    await writeFile(file, 'The answer is 42.\n');
    const before = await gateway.settledBalance();
    const prompt = `Read note.txt and tell me the answer. [[fake:tool_call=Read]] [[fake:tool_arg=file_path:${file}]] [[fake:reply_words=4]]`;
    const { code, stdout, stderr } = await run(
      ['-p', prompt, '--output-format', 'json', '--max-turns', '4', '--allowedTools', 'Read'],
      claudeEnv(home, gateway.proxyBases[0]!.slice(0, -'/v1'.length), gateway.apiKey, slug), work,
    );
    expect({ code, stderr: stderr.slice(0, 2000) }, stdout.slice(0, 2000)).toMatchObject({ code: 0 });
    expect(JSON.parse(stdout)).toMatchObject({ type: 'result', subtype: 'success', is_error: false, num_turns: 2 });

    const [first, second] = anthropicUpstream.requests.map((request) => request.body as Record<string, any>);
    expect(first!.thinking?.type, JSON.stringify({ thinking: first!.thinking, output_config: first!.output_config })).toBeDefined();
    // The assistant turn with the tool call came back with its thinking first, signed as the upstream signed it.
    const assistant = (second!.messages as Array<{ role: string; content: Array<Record<string, any>> }>).find((message) => message.role === 'assistant')!;
    expect(assistant.content[0]!.type).toBe('thinking');
    expect(assistant.content[0]!.signature).toBe(fakeThinkingSignature(assistant.content[0]!.thinking as string));
    expect(JSON.stringify(second!.messages)).toContain('The answer is 42.');

    const after = await gateway.settledBalance();
    const usage = await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage`);
    const records = (usage.data as Array<Record<string, any>>).filter((record) => record.model === slug);
    expect(records).toHaveLength(2);
    // Each record priced at the e2e prices, written out independently; thinking is output.
    for (const record of records) expect(record.cost_micros).toBe(String(e2eCostMicros(record.input_tokens as number, record.output_tokens as number)));
    const total = records.reduce((sum, record) => sum + BigInt(record.cost_micros as string), 0n);
    console.log(`claude code thinking: sent ${JSON.stringify(first!.thinking)} ${JSON.stringify(first!.output_config)}; ${records.map((record) => `${record.input_tokens}/${record.output_tokens} → ${record.cost_micros} µ₹`).join(', ')}`);
    expect(after.held_micros).toBe('0');
    expect(BigInt(before.available_micros as string) - BigInt(after.available_micros as string)).toBe(total);
  }, 60_000);
});
