-- What a gateway model serves (issue 16): chat models answer /v1/chat/completions, /v1/responses
-- and /v1/messages; embedding models answer /v1/embeddings only. input_modalities says what a
-- chat model's upstream accepts besides text (image_url and input_audio parts are refused with a
-- 400 for a model without them). Existing models are chat models that take text only.
ALTER TABLE gateway_models
  ADD COLUMN kind text NOT NULL DEFAULT 'chat' CHECK (kind IN ('chat', 'embedding')),
  ADD COLUMN input_modalities text[] NOT NULL DEFAULT ARRAY['text']::text[]
    CHECK (input_modalities <@ ARRAY['text', 'image', 'audio']::text[] AND 'text' = ANY (input_modalities));
