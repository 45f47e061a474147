-- Which reasoning controls a gateway model's upstream accepts (docs/surfaces/reasoning.md):
-- reasoning_efforts are the effort levels it takes (an OpenAI-compatible upstream's
-- reasoning_effort, an Anthropic upstream's output_config.effort); thinking_modes the Anthropic
-- thinking modes ('enabled' with budget_tokens, 'adaptive'); max_thinking_budget_tokens bounds a
-- request's budget (0: max_tokens only); returns_reasoning says the upstream returns its reasoning.
-- Existing models take none, so nothing a client sends today changes meaning until an admin sets them.
ALTER TABLE gateway_models
  ADD COLUMN reasoning_efforts text[] NOT NULL DEFAULT ARRAY[]::text[]
    CHECK (reasoning_efforts <@ ARRAY['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']::text[]),
  ADD COLUMN thinking_modes text[] NOT NULL DEFAULT ARRAY[]::text[]
    CHECK (thinking_modes <@ ARRAY['enabled', 'adaptive']::text[]),
  ADD COLUMN max_thinking_budget_tokens integer NOT NULL DEFAULT 0 CHECK (max_thinking_budget_tokens >= 0),
  ADD COLUMN returns_reasoning boolean NOT NULL DEFAULT false;
