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
  /** The operationIds of the admin API this role allows in the organisation (from the server's route table): the dashboard's gates. */
  allowed_operations: string[];
}

/** A person as GET /admin/v1/me shows them (the dashboard reads its memberships' allowed operations). */
export interface Person {
  id: string;
  email: string;
  display_name: string | null;
  platform_admin: boolean;
  memberships: Membership[];
}

/** The answer of sign-in, link completion and GET /auth/session (its person then re-read from /admin/v1/me, see `loadPerson`). */
export interface SessionAnswer {
  person: Person;
  csrf_token: string;
}

/** The current session and what changes it. */
export interface Session {
  /** The signed-in person; undefined when signed out. */
  person: Person | undefined;
  /** Adopts the answer of a sign-in or a completed link (reading the person's allowed operations first). */
  signedIn(answer: SessionAnswer): Promise<void>;
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

/**
 * The signed-in person with what each membership allows: GET /admin/v1/me is where the server
 * answers with the operations of each role, so every gate of the dashboard is read from there.
 */
export async function loadPerson(): Promise<Person> {
  return api.get<Person>('/admin/v1/me');
}

/** The session this browser already has (its cookie), with the person from `loadPerson`, or undefined when signed out. */
export async function loadSession(): Promise<SessionAnswer | undefined> {
  try {
    const answer = await api.get<SessionAnswer>('/auth/session');
    setCsrfToken(answer.csrf_token);
    return { ...answer, person: await loadPerson() };
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
