import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { adminConfigSchema } from '@gateway/admin';
import { ledgerConfigSchema } from '@gateway/ledger';
import { proxyConfigSchema } from '@gateway/proxy';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

describe('README configuration table', () => {
  it.each([
    ['ledger', ledgerConfigSchema],
    ['admin', adminConfigSchema],
    ['proxy', proxyConfigSchema],
  ] as const)('lists every variable the %s reads', (_service, schema) => {
    const missing = Object.keys(schema.shape).filter((variable) => !readme.includes(`| \`${variable}\` |`));
    expect(missing).toEqual([]);
  });
});
