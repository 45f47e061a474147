import { describe, expect, it } from 'vitest';
import { quickstartSnippets } from './snippets.ts';

describe('quickstartSnippets', () => {
  it('fills in the base URL, the key and the model, and gives Anthropic clients the base without /v1', () => {
    const snippets = quickstartSnippets({ baseUrl: 'https://api.example.com/v1', apiKey: 'gwsk_abc', model: 'demo' });
    expect(snippets.map((s) => s.title)).toEqual([
      'curl', 'OpenAI SDK for JavaScript', 'OpenAI SDK for Python', 'Anthropic SDK for JavaScript', 'Claude Code', 'Codex CLI',
    ]);
    const [curl, openaiJs, openaiPy, anthropicJs, claudeCode, codex] = snippets.map((s) => s.text);
    expect(curl).toBe([
      'curl -sS \'https://api.example.com/v1/chat/completions\' \\',
      '  -H "Authorization: Bearer gwsk_abc" \\',
      '  -H \'content-type: application/json\' \\',
      '  -d \'{"model":"demo","messages":[{"role":"user","content":"Say hello"}]}\'',
    ].join('\n'));
    expect(openaiJs).toContain('new OpenAI({ baseURL: \'https://api.example.com/v1\', apiKey: \'gwsk_abc\' })');
    expect(openaiPy).toContain('OpenAI(base_url="https://api.example.com/v1", api_key="gwsk_abc")');
    expect(openaiPy).not.toContain('import os');
    expect(anthropicJs).toContain('new Anthropic({ baseURL: \'https://api.example.com\', apiKey: \'gwsk_abc\' })');
    expect(claudeCode).toContain('export ANTHROPIC_BASE_URL=\'https://api.example.com\'');
    expect(claudeCode).toContain('export ANTHROPIC_AUTH_TOKEN=\'gwsk_abc\'');
    expect(codex).toContain('base_url = "https://api.example.com/v1"');
    expect(codex).toContain('export GATEWAY_API_KEY=\'gwsk_abc\'');
  });

  it('reads $GATEWAY_API_KEY when no new key is at hand', () => {
    const [curl, openaiJs, openaiPy, , claudeCode] = quickstartSnippets({ baseUrl: 'http://127.0.0.1:8080/v1', apiKey: undefined, model: 'demo' }).map((s) => s.text);
    expect(curl).toContain('-H "Authorization: Bearer $GATEWAY_API_KEY"');
    expect(openaiJs).toContain('apiKey: process.env.GATEWAY_API_KEY');
    expect(openaiPy).toMatch(/^import os\n[\s\S]*api_key=os\.environ\["GATEWAY_API_KEY"\]/);
    expect(claudeCode).toContain('export ANTHROPIC_AUTH_TOKEN="$GATEWAY_API_KEY"');
  });

  it('quotes what it fills in for each language', () => {
    const [curl, openaiJs] = quickstartSnippets({ baseUrl: 'https://x.example/v1', apiKey: undefined, model: 'it\'s' }).map((s) => s.text);
    expect(curl).toContain('-d \'{"model":"it\'\\\'\'s"');
    expect(openaiJs).toContain('model: \'it\\\'s\',');
  });

  it('strips only a trailing /v1 for Anthropic clients, keeping a path prefix', () => {
    const anthropicBase = (baseUrl: string) => quickstartSnippets({ baseUrl, apiKey: 'k', model: 'demo' })[4]!.text;
    expect(anthropicBase('https://example.com/gateway/v1')).toContain('export ANTHROPIC_BASE_URL=\'https://example.com/gateway\'');
    expect(anthropicBase('https://example.com/v1/')).toContain('export ANTHROPIC_BASE_URL=\'https://example.com\'');
  });
});
