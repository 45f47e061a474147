import { describe, expect, it } from 'vitest';
import { allows } from './page-props.ts';

describe('allows', () => {
  it('follows the operations the membership allows, lets platform admins do everything and nobody without an organisation', () => {
    // What GET /admin/v1/me lists for each role: a viewer reads, a developer also changes projects, an owner also invites.
    const viewer = new Set(['listProjects']);
    const developer = new Set([...viewer, 'createProject']);
    const owner = new Set([...developer, 'createInvitation']);
    expect(allows(viewer, 'listProjects')).toBe(true);
    expect(allows(viewer, 'createProject')).toBe(false);
    expect(allows(developer, 'createProject')).toBe(true);
    expect(allows(developer, 'createInvitation')).toBe(false);
    expect(allows(owner, 'createProject')).toBe(true);
    expect(allows('all', 'createInvitation')).toBe(true);
    expect(allows(undefined, 'listProjects')).toBe(false);
  });
});
