-- Price by token class (issue 25): a gateway model's price sheet gives, for customers and as
-- provider cost, µ₹ per million tokens of cached input, cache writes (5-minute and 1-hour),
-- audio input and image input (parts of the prompt) and reasoning (part of the output).
-- Existing models get each input class at their input price, so nobody's bill changes until an
-- admin sets them; reasoning NULL means "priced as output" and follows the output price.
ALTER TABLE gateway_models
  ADD COLUMN cached_input_price_micros_per_mtok bigint CHECK (cached_input_price_micros_per_mtok >= 0),
  ADD COLUMN cache_write_5m_price_micros_per_mtok bigint CHECK (cache_write_5m_price_micros_per_mtok >= 0),
  ADD COLUMN cache_write_1h_price_micros_per_mtok bigint CHECK (cache_write_1h_price_micros_per_mtok >= 0),
  ADD COLUMN reasoning_price_micros_per_mtok bigint CHECK (reasoning_price_micros_per_mtok >= 0),
  ADD COLUMN audio_input_price_micros_per_mtok bigint CHECK (audio_input_price_micros_per_mtok >= 0),
  ADD COLUMN image_input_price_micros_per_mtok bigint CHECK (image_input_price_micros_per_mtok >= 0),
  ADD COLUMN provider_cached_input_cost_micros_per_mtok bigint CHECK (provider_cached_input_cost_micros_per_mtok >= 0),
  ADD COLUMN provider_cache_write_5m_cost_micros_per_mtok bigint CHECK (provider_cache_write_5m_cost_micros_per_mtok >= 0),
  ADD COLUMN provider_cache_write_1h_cost_micros_per_mtok bigint CHECK (provider_cache_write_1h_cost_micros_per_mtok >= 0),
  ADD COLUMN provider_reasoning_cost_micros_per_mtok bigint CHECK (provider_reasoning_cost_micros_per_mtok >= 0),
  ADD COLUMN provider_audio_input_cost_micros_per_mtok bigint CHECK (provider_audio_input_cost_micros_per_mtok >= 0),
  ADD COLUMN provider_image_input_cost_micros_per_mtok bigint CHECK (provider_image_input_cost_micros_per_mtok >= 0);

UPDATE gateway_models SET
  cached_input_price_micros_per_mtok = input_price_micros_per_mtok,
  cache_write_5m_price_micros_per_mtok = input_price_micros_per_mtok,
  cache_write_1h_price_micros_per_mtok = input_price_micros_per_mtok,
  audio_input_price_micros_per_mtok = input_price_micros_per_mtok,
  image_input_price_micros_per_mtok = input_price_micros_per_mtok,
  provider_cached_input_cost_micros_per_mtok = provider_input_cost_micros_per_mtok,
  provider_cache_write_5m_cost_micros_per_mtok = provider_input_cost_micros_per_mtok,
  provider_cache_write_1h_cost_micros_per_mtok = provider_input_cost_micros_per_mtok,
  provider_audio_input_cost_micros_per_mtok = provider_input_cost_micros_per_mtok,
  provider_image_input_cost_micros_per_mtok = provider_input_cost_micros_per_mtok;

ALTER TABLE gateway_models
  ALTER COLUMN cached_input_price_micros_per_mtok SET NOT NULL,
  ALTER COLUMN cache_write_5m_price_micros_per_mtok SET NOT NULL,
  ALTER COLUMN cache_write_1h_price_micros_per_mtok SET NOT NULL,
  ALTER COLUMN audio_input_price_micros_per_mtok SET NOT NULL,
  ALTER COLUMN image_input_price_micros_per_mtok SET NOT NULL,
  ALTER COLUMN provider_cached_input_cost_micros_per_mtok SET NOT NULL,
  ALTER COLUMN provider_cache_write_5m_cost_micros_per_mtok SET NOT NULL,
  ALTER COLUMN provider_cache_write_1h_cost_micros_per_mtok SET NOT NULL,
  ALTER COLUMN provider_audio_input_cost_micros_per_mtok SET NOT NULL,
  ALTER COLUMN provider_image_input_cost_micros_per_mtok SET NOT NULL;

-- A row written without class prices (a script, an older admin during a rolling upgrade) gets
-- the same defaults as the API gives: each input class at the input price (cost). BEFORE INSERT
-- runs before the NOT NULL checks.
CREATE FUNCTION gateway_models_class_price_defaults() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.cached_input_price_micros_per_mtok := coalesce(NEW.cached_input_price_micros_per_mtok, NEW.input_price_micros_per_mtok);
  NEW.cache_write_5m_price_micros_per_mtok := coalesce(NEW.cache_write_5m_price_micros_per_mtok, NEW.input_price_micros_per_mtok);
  NEW.cache_write_1h_price_micros_per_mtok := coalesce(NEW.cache_write_1h_price_micros_per_mtok, NEW.input_price_micros_per_mtok);
  NEW.audio_input_price_micros_per_mtok := coalesce(NEW.audio_input_price_micros_per_mtok, NEW.input_price_micros_per_mtok);
  NEW.image_input_price_micros_per_mtok := coalesce(NEW.image_input_price_micros_per_mtok, NEW.input_price_micros_per_mtok);
  NEW.provider_cached_input_cost_micros_per_mtok := coalesce(NEW.provider_cached_input_cost_micros_per_mtok, NEW.provider_input_cost_micros_per_mtok);
  NEW.provider_cache_write_5m_cost_micros_per_mtok := coalesce(NEW.provider_cache_write_5m_cost_micros_per_mtok, NEW.provider_input_cost_micros_per_mtok);
  NEW.provider_cache_write_1h_cost_micros_per_mtok := coalesce(NEW.provider_cache_write_1h_cost_micros_per_mtok, NEW.provider_input_cost_micros_per_mtok);
  NEW.provider_audio_input_cost_micros_per_mtok := coalesce(NEW.provider_audio_input_cost_micros_per_mtok, NEW.provider_input_cost_micros_per_mtok);
  NEW.provider_image_input_cost_micros_per_mtok := coalesce(NEW.provider_image_input_cost_micros_per_mtok, NEW.provider_input_cost_micros_per_mtok);
  RETURN NEW;
END
$$;
CREATE TRIGGER gateway_models_class_price_defaults BEFORE INSERT ON gateway_models
  FOR EACH ROW EXECUTE FUNCTION gateway_models_class_price_defaults();
