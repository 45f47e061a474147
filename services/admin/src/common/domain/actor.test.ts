import { GatewayError } from '@gateway/errors';
import { describe, expect, it } from 'vitest';
import { requireRole, selectedOrganisation, type Actor, type OrganisationRole } from './actor.ts';

const orgA = 'org_aaaaaaaaaaaaaaaaaaaaaaaa';
const orgB = 'org_bbbbbbbbbbbbbbbbbbbbbbbb';

function person(roles: Record<string, OrganisationRole>, platformAdmin = false): Actor {
  return { kind: 'person', personId: 'per_000000000000000000000001', sessionId: 's', platformAdmin, roles: new Map(Object.entries(roles)) };
}

/** The catalogue code an action throws, or 'ok'. */
function outcome(action: () => unknown): string {
  try {
    action();
    return 'ok';
  } catch (error) {
    if (error instanceof GatewayError) return error.code;
    throw error;
  }
}

describe('selectedOrganisation', () => {
  it('takes the organisation named, whoever asks (whether they may see it is checked after)', () => {
    expect(selectedOrganisation(person({ [orgA]: 'viewer' }), orgB)).toBe(orgB);
    expect(selectedOrganisation({ kind: 'platform_admin', tokenId: 'adm_1' }, orgA)).toBe(orgA);
  });

  it('left out: the caller\'s only organisation, every organisation for a platform actor', () => {
    expect(selectedOrganisation(person({ [orgA]: 'viewer' }), undefined)).toBe(orgA);
    expect(selectedOrganisation({ kind: 'organisation_token', tokenId: 'adm_2', organisationId: orgB }, undefined)).toBe(orgB);
    expect(selectedOrganisation({ kind: 'platform_admin', tokenId: 'adm_1' }, undefined)).toBeUndefined();
    // A platform admin who is also a member still reads across every organisation.
    expect(selectedOrganisation(person({ [orgA]: 'viewer' }, true), undefined)).toBeUndefined();
  });

  it('left out by a member of several organisations: 400 naming organisation_id; by a person in none: 403', () => {
    expect(outcome(() => selectedOrganisation(person({ [orgA]: 'owner', [orgB]: 'viewer' }), undefined))).toBe('invalid_request');
    expect(outcome(() => selectedOrganisation(person({}), undefined))).toBe('permission_denied');
  });

  it('the role is then the one held in the organisation selected, not in any other', () => {
    const ownerHereViewerThere = person({ [orgA]: 'owner', [orgB]: 'viewer' });
    expect(outcome(() => requireRole(ownerHereViewerThere, selectedOrganisation(ownerHereViewerThere, orgA)!, 'owner'))).toBe('ok');
    expect(outcome(() => requireRole(ownerHereViewerThere, selectedOrganisation(ownerHereViewerThere, orgB)!, 'owner'))).toBe('permission_denied');
  });
});
