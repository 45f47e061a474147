import * as accounts from './accounts.ts';
import * as members from './members.ts';
import { describeLink, peopleContext, type PeopleContext, type PeopleServiceDeps } from './people-context.ts';
import * as signIn from './sign-in.ts';

/** An operation of this area with its context bound, so callers pass only the request's arguments. */
function bound<Args extends unknown[], Result>(ctx: PeopleContext, operation: (ctx: PeopleContext, ...args: Args) => Result) {
  return (...args: Args): Result => operation(ctx, ...args);
}

/**
 * People, memberships, invitation and reset links, sessions (route tags "people" and "sign-in"):
 * the operations of sign-in.ts, members.ts and accounts.ts over one context. Every change is
 * audited with the person or token that made it; passwords are argon2id hashes, session ids,
 * CSRF and link tokens are stored as SHA-256 only.
 */
export function createPeopleService(deps: PeopleServiceDeps) {
  const ctx = peopleContext(deps);
  return {
    signIn: bound(ctx, signIn.signIn),
    currentSession: bound(ctx, signIn.currentSession),
    signOut: bound(ctx, signIn.signOut),
    describeLink: bound(ctx, describeLink),
    followLink: bound(ctx, signIn.followLink),
    getMe: bound(ctx, members.getMe),
    listMembers: bound(ctx, members.listMembers),
    updateMember: bound(ctx, members.updateMember),
    removeMember: bound(ctx, members.removeMember),
    createInvitation: bound(ctx, members.createInvitation),
    listInvitations: bound(ctx, members.listInvitations),
    revokeInvitation: bound(ctx, members.revokeInvitation),
    createMemberPasswordReset: bound(ctx, members.createMemberPasswordReset),
    listPeople: bound(ctx, accounts.listPeople),
    createPlatformAdminPerson: bound(ctx, accounts.createPlatformAdminPerson),
    updatePersonAccount: bound(ctx, accounts.updatePersonAccount),
    createPersonPasswordReset: bound(ctx, accounts.createPersonPasswordReset),
  };
}
