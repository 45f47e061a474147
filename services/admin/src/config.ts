import { commonEnv, loadConfig, z } from '@gateway/config';
import { checkGrpcTlsEnv, grpcTlsEnv } from '@gateway/grpc';
import { isWellFormedSecret } from '@gateway/secrets';
import { encryptionKeyProblem } from './domain/credential-cipher.ts';

/** A URL the admin may seed the demo model with: http(s), no credentials in it. */
const demoUpstreamUrl = z.string().refine((value) => {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
}, { error: 'must be an http:// or https:// URL without credentials' });

/**
 * The admin's environment, keyed by variable name. Every problem is reported at once by
 * `loadConfig`; no value is ever echoed back (several are secrets).
 */
export const adminConfigSchema = z.object({
  BIND_HOST: z.string().min(1).default('127.0.0.1'),
  LOG_LEVEL: commonEnv.logLevel,
  DATABASE_URL: commonEnv.postgresUrl.optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  SHUTDOWN_GRACE_MS: commonEnv.durationMs(10_000),
  /** Port of the admin REST API, /healthz and /readyz. */
  ADMIN_HTTP_PORT: commonEnv.port(8081),
  /** Port of the config stream (gateway.config.v1.ConfigService) that proxies connect to. */
  ADMIN_GRPC_PORT: commonEnv.port(50052),
  /** host:port (or any grpc-js target) of the ledger's gRPC server. */
  LEDGER_GRPC_URL: z.string().regex(/^\S+$/, 'must be a gRPC target such as 127.0.0.1:50051').default('127.0.0.1:50051'),
  /** Base64 of the 32-byte AES-256-GCM key that encrypts upstream credentials at rest. */
  ADMIN_ENCRYPTION_KEY: z.string({ error: 'is required: base64 of 32 random bytes (e.g. `openssl rand -base64 32`)' })
    .superRefine((value, ctx) => {
      const problem = encryptionKeyProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /** A gwadm_ token to store as the platform-admin token when none exists yet. */
  ADMIN_BOOTSTRAP_TOKEN: z.string()
    .refine((value) => isWellFormedSecret('adminToken', value), { error: 'must be a well-formed gwadm_ token (prefix, length and checksum)' })
    .optional(),
  /** true: upstream base URLs may use http and private/loopback addresses (local development, demo). */
  ADMIN_ALLOW_PRIVATE_UPSTREAMS: z.stringbool({ error: 'must be true or false' }).default(false),
  /** When set, a gateway model `demo` pointing at this URL is created once. */
  DEMO_UPSTREAM_URL: demoUpstreamUrl.optional(),
  /** How long a config-changing call waits for connected proxies to acknowledge, ms. */
  SNAPSHOT_ACK_TIMEOUT_MS: commonEnv.durationMs(5_000),
  /** Interval of heartbeats on the config stream, ms. */
  ADMIN_HEARTBEAT_INTERVAL_MS: commonEnv.durationMs(5_000),
  /** Deadline of each call to the ledger, ms. */
  LEDGER_CALL_TIMEOUT_MS: commonEnv.durationMs(5_000),
  ...grpcTlsEnv,
}).superRefine(checkGrpcTlsEnv);

/** The admin's validated configuration (keys are the environment variable names). */
export type AdminConfig = z.infer<typeof adminConfigSchema>;

/** Reads and validates the admin's configuration; throws ConfigError listing every problem. */
export function loadAdminConfig(env: Record<string, string | undefined> = process.env): AdminConfig {
  return loadConfig('admin', adminConfigSchema, env);
}
