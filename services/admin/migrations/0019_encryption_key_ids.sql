-- Key rotation for ADMIN_ENCRYPTION_KEY (docs/operations.md "Rotating ADMIN_ENCRYPTION_KEY"):
-- sealed values now name the key that sealed them, 'v2:<key id>:<iv>:<tag>:<ciphertext>'; values
-- sealed before stay 'v1:<iv>:<tag>:<ciphertext>' until `cli.ts reencrypt` re-seals them.
-- alert_webhooks.secret_sealed never had a format check; the credential column gets one for both.
ALTER TABLE gateway_models DROP CONSTRAINT gateway_models_upstream_api_key_encrypted_check;
ALTER TABLE gateway_models ADD CONSTRAINT gateway_models_upstream_api_key_encrypted_check
  CHECK (upstream_api_key_encrypted ~ '^(v1:|v2:[0-9a-f]{8}:)');
COMMENT ON COLUMN gateway_models.upstream_api_key_encrypted IS
  'The provider credential, AES-256-GCM (CredentialCipher): v2:<key id>:<iv>:<tag>:<ciphertext>, or v1 without the key id. NULL: none.';
