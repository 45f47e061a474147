import { describe, expect, it } from 'vitest';
import { commonEnv, ConfigError, loadConfig, z } from './index.ts';

const schema = z.object({
  PORT: commonEnv.port(8080),
  LOG_LEVEL: commonEnv.logLevel,
  DATABASE_URL: commonEnv.postgresUrl.optional(),
  SECRET: z.string().min(10),
});

describe('loadConfig', () => {
  it('applies defaults and coerces numbers', () => {
    expect(loadConfig('t', schema, { SECRET: '0123456789', PORT: '9000' })).toEqual({ PORT: 9000, LOG_LEVEL: 'info', SECRET: '0123456789' });
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig('t', schema, { SECRET: '0123456789', PORT: '', DATABASE_URL: '' }).PORT).toBe(8080);
  });

  it('reports every problem at once and never echoes values', () => {
    let caught: unknown;
    try {
      loadConfig('proxy', schema, { PORT: 'eighty', LOG_LEVEL: 'loud', DATABASE_URL: 'mysql://x', SECRET: 'short-secret'.slice(0, 5) });
    } catch (error) { caught = error; }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect(error.problems).toHaveLength(4);
    expect(error.message).toMatch(/PORT/);
    expect(error.message).toMatch(/LOG_LEVEL/);
    expect(error.message).toMatch(/DATABASE_URL/);
    expect(error.message).toMatch(/SECRET/);
    expect(error.message).not.toContain('short');
  });
});
