-- Price by token class (issue 25): a usage record keeps its usage by token price class as its
-- Settle gave it, a JSON array of {tokenClass, tokens, costMicros, providerCostMicros} (figures as
-- decimal strings), whose costMicros sum to the record's cost_micros (the Settle checks it).
-- NULL: a plain usage (input_tokens and output_tokens at the input and output prices), as every
-- record before this migration. jsonb rather than a column per class: the classes a provider
-- reports grow (audio output, web search…) without a migration each, and nothing sums them in SQL.
ALTER TABLE usage_records ADD COLUMN token_classes jsonb
  CHECK (token_classes IS NULL OR jsonb_typeof(token_classes) = 'array');
