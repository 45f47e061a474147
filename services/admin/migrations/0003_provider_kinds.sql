-- Gateway models may use every upstream provider kind the proxy has an adapter for
-- (services/proxy/src/upstreams/; the same list as services/admin/src/domain/provider-kinds.ts).
ALTER TABLE gateway_models DROP CONSTRAINT gateway_models_provider_kind_check;
ALTER TABLE gateway_models ADD CONSTRAINT gateway_models_provider_kind_check CHECK (provider_kind IN (
  'openai_compatible', 'openai', 'azure_openai', 'vllm', 'ollama', 'groq', 'together', 'anthropic'
));
