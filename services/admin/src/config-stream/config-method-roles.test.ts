import { configV1 } from '@gateway/contracts';
import { authorizationError } from '@gateway/grpc';
import { describe, expect, it } from 'vitest';
import { configMethodRoles } from './config-method-roles.ts';

describe('configMethodRoles', () => {
  it('names every method of ConfigService, and nothing else', () => {
    expect(Object.keys(configMethodRoles).sort()).toEqual(Object.keys(configV1.ConfigServiceService).sort());
  });

  it('lets only the proxy open the config stream', () => {
    expect(authorizationError(configMethodRoles, 'streamConfig', 'proxy')).toBeUndefined();
    expect(authorizationError(configMethodRoles, 'streamConfig', 'admin')?.code).toBe('permission_denied');
    expect(authorizationError(configMethodRoles, 'streamConfig', 'ledger')?.code).toBe('permission_denied');
    expect(authorizationError(configMethodRoles, 'streamConfig', undefined)?.code).toBe('unauthenticated');
  });
});
