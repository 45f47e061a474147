import { describe, expect, it } from 'vitest';
import { matchPath } from './router.ts';

describe('matchPath', () => {
  it('matches literal segments and names the :params (URI-decoded)', () => {
    expect(matchPath('/projects', '/projects')).toEqual({});
    expect(matchPath('/link/:token', '/link/abc%2Fdef')).toEqual({ token: 'abc/def' });
  });

  it('refuses other paths, missing or extra segments, empty params and bad escapes', () => {
    expect(matchPath('/projects', '/project')).toBeUndefined();
    expect(matchPath('/link/:token', '/link')).toBeUndefined();
    expect(matchPath('/link/:token', '/link/')).toBeUndefined();
    expect(matchPath('/link/:token', '/link/a/b')).toBeUndefined();
    expect(matchPath('/link/:token', '/link/%E0%A4%A')).toBeUndefined();
  });
});
