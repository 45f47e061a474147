/**
 * The model names coding agents send when the user has set none (their built-in names), for
 * the releases this repository pins (root package.json: `@anthropic-ai/claude-code`; the Codex
 * CLI's pin where it has one). The embedded demo (`pnpm start`) seeds a platform alias from each
 * to its demo model, so both agents work with no model variables (README, "Agents"). Read from
 * each release's binary: Claude Code 2.1.332 asks for claude-opus-5-5 by default and names the
 * others for its sub-agents and its fast model; Codex 0.171.0 asks for gpt-6.2-sol by default and
 * lists the rest in its model picker. A bump of either pin should refresh these lists.
 */
export const agentBuiltInModelNames = {
  claudeCode: [
    'claude-opus-5-5', 'claude-opus-5', 'claude-sonnet-5-5', 'claude-sonnet-5', 'claude-haiku-5-5',
    'claude-opus-4-8', 'claude-opus-4-7', 'claude-opus-4-6', 'claude-opus-4-5', 'claude-opus-4-5-20251101', 'claude-opus-4-1', 'claude-opus-4-1-20250805',
    'claude-sonnet-4-6', 'claude-sonnet-4-5', 'claude-sonnet-4-5-20250929', 'claude-haiku-4-5', 'claude-haiku-4-5-20251001',
  ],
  codex: [
    'gpt-6.2-sol', 'gpt-6.2-astra', 'gpt-6.1-sol', 'gpt-6.1-terra', 'gpt-6-sol', 'gpt-6-astra', 'gpt-6-luna',
    'gpt-5.6-sol', 'gpt-5.6-terra', 'gpt-5.6-luna', 'gpt-5.5',
  ],
} as const;
