-- GST tax documents: the tax invoice (CGST Rules, Rule 46) or receipt voucher (Rule 50) issued
-- for a top-up, the monthly tax invoice for usage in receipt-voucher mode, and credit notes for
-- refunds. A document is immutable once issued: a trigger refuses every UPDATE and DELETE.
-- Serials are unique and consecutive per (prefix, financial year, series), allocated from a
-- counter row under its row lock inside the issuing transaction (a rollback returns the number).

CREATE TABLE tax_document_counters (
  prefix text NOT NULL CHECK (prefix ~ '^[A-Z]{1,4}$'),
  -- Indian financial year April-March (IST), e.g. '2026-27'.
  financial_year text NOT NULL CHECK (financial_year ~ '^[0-9]{4}-[0-9]{2}$'),
  -- One letter per series: T tax invoice, R receipt voucher, C credit note.
  series text NOT NULL CHECK (series IN ('T', 'R', 'C')),
  last_number bigint NOT NULL CHECK (last_number > 0),
  PRIMARY KEY (prefix, financial_year, series)
);

CREATE TABLE tax_documents (
  id text PRIMARY KEY CHECK (id ~ '^doc_[0-9a-f]{24}$'),
  kind text NOT NULL CHECK (kind IN ('tax_invoice', 'receipt_voucher', 'credit_note')),
  -- Rule 46(b): at most 16 characters, letters, digits, '-' and '/', unique in the financial year.
  serial text NOT NULL UNIQUE CHECK (char_length(serial) <= 16 AND serial ~ '^[A-Z0-9/-]+$'),
  financial_year text NOT NULL CHECK (financial_year ~ '^[0-9]{4}-[0-9]{2}$'),
  series text NOT NULL CHECK (series IN ('T', 'R', 'C')),
  sequence_number bigint NOT NULL CHECK (sequence_number > 0),
  issued_at timestamptz NOT NULL,
  organisation_id text NOT NULL REFERENCES organisations (id),
  -- The top-up a top-up document or credit note is for; NULL for a monthly usage invoice.
  topup_id text REFERENCES topups (id),
  -- The refund a credit note is for (refunds arrive in migration 0009); NULL otherwise.
  refund_id text UNIQUE,
  -- A monthly usage invoice's month in IST, 'YYYY-MM'; NULL otherwise.
  usage_month text CHECK (usage_month IS NULL OR usage_month ~ '^[0-9]{4}-[0-9]{2}$'),
  -- The document a credit note (or a monthly invoice's adjustment) refers to.
  references_document_id text REFERENCES tax_documents (id),
  -- The supplier as configured when issued: {name, address, gstin|null, state_code}.
  supplier jsonb NOT NULL,
  -- The recipient (the top-up's billing snapshot): {legal_name, address, gstin|null, state_code}.
  recipient jsonb NOT NULL,
  -- Two-digit GST state code of the place of supply (the recipient's state).
  place_of_supply text NOT NULL CHECK (place_of_supply ~ '^[0-9]{2}$'),
  sac text NOT NULL CHECK (sac ~ '^[0-9]{6}$'),
  description text NOT NULL CHECK (char_length(description) BETWEEN 1 AND 500),
  rate_basis_points integer NOT NULL CHECK (rate_basis_points BETWEEN 0 AND 10000),
  -- Integer paise; taxable + cgst + sgst + igst = total (docs/invoices.md: rounding rule).
  taxable_paise bigint NOT NULL CHECK (taxable_paise >= 0),
  cgst_paise bigint NOT NULL CHECK (cgst_paise >= 0),
  sgst_paise bigint NOT NULL CHECK (sgst_paise >= 0),
  igst_paise bigint NOT NULL CHECK (igst_paise >= 0),
  total_paise bigint NOT NULL CHECK (total_paise >= 0),
  -- Kind-specific facts (a monthly invoice's usage and the advances it is adjusted against).
  details jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  CHECK (taxable_paise + cgst_paise + sgst_paise + igst_paise = total_paise),
  CHECK (igst_paise = 0 OR (cgst_paise = 0 AND sgst_paise = 0)),
  CHECK ((kind = 'credit_note') = (refund_id IS NOT NULL)),
  CHECK (kind <> 'credit_note' OR references_document_id IS NOT NULL)
);
-- One top-up document (tax invoice or receipt voucher) per top-up.
CREATE UNIQUE INDEX tax_documents_one_per_topup ON tax_documents (topup_id) WHERE kind <> 'credit_note' AND topup_id IS NOT NULL;
-- One monthly usage invoice per organisation and month.
CREATE UNIQUE INDEX tax_documents_one_per_usage_month ON tax_documents (organisation_id, usage_month) WHERE usage_month IS NOT NULL;
CREATE INDEX tax_documents_organisation_issued ON tax_documents (organisation_id, issued_at, id);
CREATE INDEX tax_documents_issued ON tax_documents (issued_at, id);

-- Issued documents are immutable (Rule 46; a correction is a credit note, never an edit).
CREATE FUNCTION tax_documents_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'tax documents are immutable: % refused', TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
CREATE TRIGGER tax_documents_immutable BEFORE UPDATE OR DELETE ON tax_documents
  FOR EACH ROW EXECUTE FUNCTION tax_documents_refuse_change();
CREATE TRIGGER tax_documents_no_truncate BEFORE TRUNCATE ON tax_documents
  FOR EACH STATEMENT EXECUTE FUNCTION tax_documents_refuse_change();
