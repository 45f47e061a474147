import { describe, expect, it } from 'vitest';
import { providerKinds } from '@gateway/admin';
import { supportedProviderKinds } from '@gateway/proxy';

describe('provider kinds', () => {
  it('the admin accepts exactly the kinds the proxy has adapters for', () => {
    // A kind the admin accepts without an adapter would configure models every request to which
    // fails; an adapter the admin refuses could never be used.
    expect([...providerKinds].sort()).toEqual(supportedProviderKinds());
  });
});
