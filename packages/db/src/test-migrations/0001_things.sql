CREATE TABLE things (id text PRIMARY KEY, amount_micros bigint NOT NULL CHECK (amount_micros >= 0));
CREATE INDEX things_amount ON things (amount_micros);
