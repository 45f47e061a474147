/** The admin's public entry: the app factory and its configuration (see docs/admin-api.md). */
export { createAdminApp, type AdminApp, type AdminAppDeps } from './app.ts';
export { adminConfigSchema, embeddedEncryptionKeyFile, loadAdminConfig, type AdminConfig } from './config.ts';
export { providerKinds, type ProviderKind } from './catalog/domain/provider-kinds.ts';
export { agentBuiltInModelNames } from './catalog/domain/agent-model-names.ts';
