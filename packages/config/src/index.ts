import { z } from 'zod';

export { z };

/** Thrown when a service's environment does not satisfy its schema; lists every problem at once. */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(serviceName: string, problems: readonly string[]) {
    super(`${serviceName}: invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/**
 * Parses a service's environment with its zod schema. Variable names are the schema's keys.
 * Every problem is collected before throwing, so an operator fixes them all in one go.
 * Values of variables are never echoed back (they may be secrets).
 */
export function loadConfig<Schema extends z.ZodObject>(
  serviceName: string,
  schema: Schema,
  env: Record<string, string | undefined> = process.env,
): z.infer<Schema> {
  // Empty strings count as unset, as shells and Kubernetes manifests often produce them.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result = schema.safeParse(present);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const variable = issue.path.join('.') || '(environment)';
    return `${variable}: ${issue.message}`;
  });
  throw new ConfigError(serviceName, problems);
}

/** Schema pieces every service shares, so the same variable means the same thing everywhere. */
export const commonEnv = {
  /** A TCP port; 0 asks the OS for a free one (tests). */
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** A duration in milliseconds. */
  durationMs: (fallback: number) => z.coerce.number().int().positive().default(fallback),
  /** A PostgreSQL connection URL. */
  postgresUrl: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL'),
};
