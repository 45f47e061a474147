-- A per-model SSRF exception (issue 10, finding 4): a platform admin may mark one gateway model
-- as allowed to reach its upstream over http and at a private, loopback or otherwise internal
-- address (a self-hosted vLLM or ollama on 10.x), instead of turning ADMIN_ALLOW_PRIVATE_UPSTREAMS
-- on for every model. Setting it is audited; the proxy's connect-time guard is off for that model.
ALTER TABLE gateway_models ADD COLUMN upstream_allow_private_network boolean NOT NULL DEFAULT false;
