import { describe, expect, it } from 'vitest';
import { roleAllows } from './page-props.ts';

describe('roleAllows', () => {
  it('orders viewer < developer < owner, lets platform admins do everything and nobody without a role', () => {
    expect(roleAllows('viewer', 'viewer')).toBe(true);
    expect(roleAllows('viewer', 'developer')).toBe(false);
    expect(roleAllows('developer', 'developer')).toBe(true);
    expect(roleAllows('developer', 'owner')).toBe(false);
    expect(roleAllows('owner', 'developer')).toBe(true);
    expect(roleAllows('platform', 'owner')).toBe(true);
    expect(roleAllows(undefined, 'viewer')).toBe(false);
  });
});
