// Who is signed in: the person (with their memberships) and the session's CSRF token, shared
// through a Preact context so any component can read it with useSession().
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { ApiError, api, setCsrfToken } from './api.ts';

/** A member's role in one organisation. */
type OrganisationRole = 'viewer' | 'developer' | 'owner';

/** One organisation a person belongs to. */
interface Membership {
  organisation_id: string;
  organisation_name: string;
  role: OrganisationRole;
}

/** A person as /auth and /admin/v1/me show them. */
export interface Person {
  id: string;
  email: string;
  display_name: string | null;
  platform_admin: boolean;
  memberships: Membership[];
}

/** The answer of sign-in, link completion and GET /auth/session. */
export interface SessionAnswer {
  person: Person;
  csrf_token: string;
}

/** The current session and what changes it. */
export interface Session {
  /** The signed-in person; undefined when signed out. */
  person: Person | undefined;
  /** Adopts the answer of a sign-in or a completed link. */
  signedIn(answer: SessionAnswer): void;
  /** Ends this session (or, with `everywhere`, every session of the person) and forgets it here. */
  signOut(everywhere?: boolean): Promise<void>;
  /** Reloads the person (memberships change when an owner invites or removes). */
  refresh(): Promise<void>;
}

/** The session context; the shell provides it. */
export const SessionContext = createContext<Session | undefined>(undefined);

/** The current session (only inside the shell, which always provides one). */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (session === undefined) throw new Error('useSession outside the shell');
  return session;
}

/** The session this browser already has (its cookie), or undefined when signed out. */
export async function loadSession(): Promise<SessionAnswer | undefined> {
  try {
    const answer = await api.get<SessionAnswer>('/auth/session');
    setCsrfToken(answer.csrf_token);
    return answer;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.status === 404)) return undefined;
    throw error;
  }
}

/** Signs out on the admin (sign-out or sign-out-everywhere) and forgets the CSRF token. */
export async function endSession(everywhere: boolean): Promise<void> {
  try {
    await api.send('POST', everywhere ? '/auth/sign-out-everywhere' : '/auth/sign-out');
  } finally {
    setCsrfToken(undefined);
  }
}
