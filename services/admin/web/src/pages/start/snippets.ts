// The Quickstart page's code samples, filled in with the gateway's base URL, an API key (or the
// $GATEWAY_API_KEY placeholder) and a model slug. Each is exactly what a person copies and runs:
// tests/browser/quickstart.browser.test.ts runs the curl and openai-JS ones against a gateway.

/** What the samples are filled in with. */
export interface SnippetInputs {
  /** The proxy's /v1 base URL, e.g. https://api.example.com/v1 (no trailing slash). */
  baseUrl: string;
  /** A new API key to put in the samples, or undefined: they read GATEWAY_API_KEY from the environment. */
  apiKey: string | undefined;
  /** The gateway model slug the samples call. */
  model: string;
}

/** One code sample: its title, what to save it as or run it with, and its text. */
export interface Snippet {
  /** The heading, e.g. "curl"; also the copy button's "Copy <title>". */
  title: string;
  /** One line on how to run it. */
  hint: string;
  text: string;
}

/** The environment variable the samples read the key from when no new key is at hand. */
export const apiKeyVariable = 'GATEWAY_API_KEY';

/**
 * The base URL Anthropic clients take: the gateway's origin (and any path prefix) without the
 * trailing /v1, since they add /v1/messages themselves (docs/surfaces/messages.md).
 */
function anthropicBaseUrl(baseUrl: string): string {
  return baseUrl.replace(/\/v1\/?$/, '');
}

/** A string as a single-quoted JavaScript literal. */
function js(value: string): string {
  return `'${value.replaceAll('\\', '\\\\').replaceAll('\'', '\\\'')}'`;
}

/** A string as a double-quoted Python literal. */
function py(value: string): string {
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** A string as a single-quoted POSIX shell word. */
function sh(value: string): string {
  return `'${value.replaceAll('\'', '\'\\\'\'')}'`;
}

/** The samples, in the order the page shows them: curl, openai (JavaScript, Python), @anthropic-ai/sdk, Claude Code, Codex CLI. */
export function quickstartSnippets({ baseUrl, apiKey, model }: SnippetInputs): Snippet[] {
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello' }] });
  const jsKey = apiKey === undefined ? `process.env.${apiKeyVariable}` : js(apiKey);
  const pyKey = apiKey === undefined ? `os.environ[${py(apiKeyVariable)}]` : py(apiKey);
  const shKey = apiKey === undefined ? `"$${apiKeyVariable}"` : sh(apiKey);
  const anthropic = anthropicBaseUrl(baseUrl);
  const exportKey = `export ${apiKeyVariable}=${apiKey === undefined ? 'gwsk_...' : sh(apiKey)}`;
  return [
    {
      title: 'curl',
      hint: 'Paste into a terminal.',
      text: [
        `curl -sS ${sh(`${baseUrl}/chat/completions`)} \\`,
        `  -H "Authorization: Bearer ${apiKey === undefined ? `$${apiKeyVariable}` : apiKey}" \\`,
        '  -H \'content-type: application/json\' \\',
        `  -d ${sh(body)}`,
      ].join('\n'),
    },
    {
      title: 'OpenAI SDK for JavaScript',
      hint: 'npm install openai; save as hello.mjs and run node hello.mjs.',
      text: [
        'import OpenAI from \'openai\';',
        '',
        `const client = new OpenAI({ baseURL: ${js(baseUrl)}, apiKey: ${jsKey} });`,
        'const completion = await client.chat.completions.create({',
        `  model: ${js(model)},`,
        '  messages: [{ role: \'user\', content: \'Say hello\' }],',
        '});',
        'console.log(completion.choices[0].message.content);',
      ].join('\n'),
    },
    {
      title: 'OpenAI SDK for Python',
      hint: 'pip install openai; save as hello.py and run python hello.py.',
      text: [
        ...(apiKey === undefined ? ['import os', ''] : []),
        'from openai import OpenAI',
        '',
        `client = OpenAI(base_url=${py(baseUrl)}, api_key=${pyKey})`,
        'completion = client.chat.completions.create(',
        `    model=${py(model)},`,
        '    messages=[{"role": "user", "content": "Say hello"}],',
        ')',
        'print(completion.choices[0].message.content)',
      ].join('\n'),
    },
    {
      title: 'Anthropic SDK for JavaScript',
      hint: 'npm install @anthropic-ai/sdk; the base URL has no /v1 (the SDK adds /v1/messages).',
      text: [
        'import Anthropic from \'@anthropic-ai/sdk\';',
        '',
        `const client = new Anthropic({ baseURL: ${js(anthropic)}, apiKey: ${jsKey} });`,
        'const message = await client.messages.create({',
        `  model: ${js(model)},`,
        '  max_tokens: 256,',
        '  messages: [{ role: \'user\', content: \'Say hello\' }],',
        '});',
        'console.log(message.content);',
      ].join('\n'),
    },
    {
      title: 'Claude Code',
      hint: 'Set these in the shell you start claude from (docs/surfaces/messages.md).',
      text: [
        `export ANTHROPIC_BASE_URL=${sh(anthropic)}`,
        `export ANTHROPIC_AUTH_TOKEN=${shKey}   # sent as Authorization: Bearer (or ANTHROPIC_API_KEY, sent as x-api-key)`,
        `export ANTHROPIC_MODEL=${sh(model)}`,
        'claude',
      ].join('\n'),
    },
    {
      title: 'Codex CLI',
      hint: 'Put the TOML in ~/.codex/config.toml, then run codex (docs/surfaces/responses.md, "Codex CLI").',
      text: [
        `# ~/.codex/config.toml. Codex reads the key from the environment: ${exportKey}`,
        `model = ${py(model)}`,
        'model_provider = "gateway"',
        '',
        '[model_providers.gateway]',
        'name = "INR gateway"',
        `base_url = ${py(baseUrl)}`,
        `env_key = ${py(apiKeyVariable)}`,
        'wire_api = "responses"',
      ].join('\n'),
    },
  ];
}
