// The dashboard's shell: who is signed in, which organisation is shown (the header's switcher),
// the navigation, the banner area and the page the hash names. Signed out, every path but a
// link (#/link/<token>) shows the sign-in form, and the path stays for after sign-in.
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { onOrganisationsChanged } from './organisation-events.ts';
import { onSessionLost, setCsrfToken } from './api.ts';
import type { Organisation } from './api-types.ts';
import { listAll } from './lists.ts';
import { BannerContext, type Banner, type Banners } from './banners.ts';
import { useLive, type LiveStatus } from './live.ts';
import { allows, type AllowedOperations, type PageRole } from './page-props.ts';
import { LinkPage } from './pages/people/link.tsx';
import { pageRoutes, type PageRoute } from './pages/index.ts';
import { SignInPage } from './pages/people/sign-in.tsx';
import { matchPath, navigate, useLocation } from './router.ts';
import { SessionContext, endSession, loadPerson, loadSession, useSession, type Person, type Session, type SessionAnswer } from './session.ts';

/** Where the chosen organisation is remembered between visits (an id: nothing secret). */
const organisationStorageKey = 'gateway.dashboard.organisation';

/** An organisation the person may pick, with their role there and what it allows. */
interface OrganisationChoice {
  id: string;
  name: string;
  role: PageRole;
  allowed: AllowedOperations;
}

/** The organisations in the switcher: the person's memberships, or every organisation for a platform admin. */
function useOrganisationChoices(person: Person | undefined): OrganisationChoice[] {
  const [all, setAll] = useState<Organisation[]>([]);
  useEffect(() => {
    if (person?.platform_admin !== true) return undefined;
    const load = () => void listAll<Organisation>('/admin/v1/organisations').then(setAll, () => setAll([]));
    load();
    // A platform admin who creates or renames an organisation sees it in the switcher at once.
    return onOrganisationsChanged(load);
  }, [person?.id, person?.platform_admin]);
  return useMemo(() => {
    if (person === undefined) return [];
    if (!person.platform_admin) {
      return person.memberships.map((m) => ({ id: m.organisation_id, name: m.organisation_name, role: m.role, allowed: new Set(m.allowed_operations) }));
    }
    return all.map((organisation) => ({ id: organisation.id, name: organisation.name, role: 'platform' as const, allowed: 'all' as const }));
  }, [person, all]);
}

function storedOrganisation(): string | undefined {
  try {
    return localStorage.getItem(organisationStorageKey) ?? undefined;
  } catch {
    return undefined; // storage disabled: the first organisation is shown
  }
}

function remember(organisationId: string): void {
  try {
    localStorage.setItem(organisationStorageKey, organisationId);
  } catch {
    // Storage disabled: the choice lasts for this page only.
  }
}

const liveStatusText: Record<LiveStatus, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  off: 'Not live',
};

/** The routes a person may open with what their membership allows in the chosen organisation. */
function visibleRoutes(allowed: AllowedOperations | undefined, platformAdmin: boolean): PageRoute[] {
  return pageRoutes.filter((route) => {
    if (route.access === 'platform') return platformAdmin;
    return allows(allowed, route.access.operation);
  });
}

/** The signed-in dashboard: header, navigation, banners, page. */
function Shell(props: { person: Person }) {
  const { person } = props;
  const location = useLocation();
  const choices = useOrganisationChoices(person);
  const [chosen, setChosen] = useState<string | undefined>(storedOrganisation);
  // A shared link may name the organisation (#/projects?organisation=org_…); one the person cannot see is not found.
  const requested = location.query.organisation;
  const organisation = requested === undefined
    ? choices.find((choice) => choice.id === chosen) ?? choices[0]
    : choices.find((choice) => choice.id === requested);
  const role = organisation?.role;
  const allowed = organisation?.allowed;
  const routes = visibleRoutes(allowed, person.platform_admin);
  const [banners, setBanners] = useState<ReadonlyMap<string, Banner>>(new Map());
  const bannerApi = useMemo<Banners>(() => ({
    set(key, banner) {
      setBanners((current) => {
        if (banner === undefined && !current.has(key)) return current;
        const next = new Map(current);
        if (banner === undefined) next.delete(key);
        else next.set(key, banner);
        return next;
      });
    },
  }), []);

  // Alerts reach every page: a budget or low-balance alert shows in the banner area until dismissed.
  const liveStatus = useLive(organisation?.id, (message) => {
    if (message.type === 'alert') bannerApi.set(`alert:${message.alert.id}`, { tone: 'alert', text: message.alert.message });
  });
  // Banners belong to the organisation they were raised for.
  useEffect(() => setBanners(new Map()), [organisation?.id]);

  // The first page the person may open is home: the overview for a member, the platform area for
  // a platform admin who belongs to no organisation yet (the first start's only person).
  const home = routes.some((route) => route.path === '/overview') ? '/overview' : routes[0]?.path ?? '/overview';
  const path = location.path === '/' || (location.path === '/overview' && home !== '/overview') ? home : location.path;
  let page: { route: PageRoute; params: Record<string, string> } | undefined;
  for (const route of requested !== undefined && organisation === undefined ? [] : routes) {
    const params = matchPath(route.path, path);
    if (params !== undefined) {
      page = { route, params: { ...location.query, ...params } };
      break;
    }
  }
  useEffect(() => {
    document.title = `${page?.route.title ?? 'Not found'} · Gateway dashboard`;
  }, [page?.route.title]);

  const session = useSession();
  const Page = page?.route.component;
  return (
    <>
      <a class="skip-link" href="#main" onClick={(event) => { event.preventDefault(); document.getElementById('main')?.focus(); }}>Skip to content</a>
      <header class="top">
        <div class="brand">Gateway</div>
        <div class="organisation">
          <label for="organisation-switcher">Organisation</label>
          <select
            id="organisation-switcher"
            value={organisation?.id ?? ''}
            disabled={choices.length === 0}
            onChange={(event) => {
              const id = event.currentTarget.value;
              setChosen(id);
              if (requested !== undefined) navigate(location.path);
              remember(id);
            }}
          >
            {choices.length === 0 ? <option value="">None</option> : null}
            {choices.map((choice) => <option key={choice.id} value={choice.id}>{choice.name}</option>)}
          </select>
          {role === undefined ? null : <span class="role-badge">{role}</span>}
        </div>
        <span class={`live-status live-${liveStatus}`} role="status" aria-live="polite">
          <span class="dot" aria-hidden="true" />{liveStatusText[liveStatus]}
        </span>
        <div class="person">
          <span class="person-name" title={person.email}>{person.display_name ?? person.email}</span>
          <button type="button" class="secondary" onClick={() => void session.signOut()}>Sign out</button>
          <button type="button" class="link-button" onClick={() => void session.signOut(true)}>Sign out everywhere</button>
        </div>
      </header>
      <nav class="main-nav" aria-label="Main">
        <ul>
          {routes.map((route) => (
            <li key={route.path}>
              <a href={`#${route.path}`} aria-current={page?.route === route ? 'page' : undefined}>{route.title}</a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="banners" aria-live="assertive">
        {[...banners].map(([key, banner]) => (
          <div key={key} class={`banner banner-${banner.tone}`} role={banner.tone === 'info' ? 'status' : 'alert'}>
            <span>{banner.text}</span>
            {key.startsWith('alert:') ? (
              <button type="button" class="link-button" onClick={() => bannerApi.set(key, undefined)} aria-label={`Dismiss: ${banner.text}`}>Dismiss</button>
            ) : null}
          </div>
        ))}
      </div>
      <main id="main" tabIndex={-1}>
        <BannerContext.Provider value={bannerApi}>
          {Page === undefined ? (
            <section>
              <h1>Page not found</h1>
              <p>There is no page at this address, or your role does not include it. <a href={`#${home}`}>Go to the {home === '/overview' ? 'overview' : 'first page you may open'}</a>.</p>
            </section>
          ) : choices.length === 0 && page?.route.access !== 'platform' ? (
            <section>
              <h1>{page?.route.title}</h1>
              <p>You are not a member of any organisation yet. Ask an owner to invite you.</p>
            </section>
          ) : (
            <Page key={`${organisation?.id ?? ''}${path}`} organisationId={organisation?.id} role={role} allowed={allowed} params={page!.params} />
          )}
        </BannerContext.Provider>
      </main>
    </>
  );
}

/** The whole dashboard: loads the session, then shows the link page, the sign-in form or the shell. */
export function App() {
  const location = useLocation();
  const [state, setState] = useState<{ loading: boolean; person: Person | undefined; notice: string | undefined; failure: string | undefined }>(
    { loading: true, person: undefined, notice: undefined, failure: undefined },
  );

  useEffect(() => {
    onSessionLost(() => setState({ loading: false, person: undefined, notice: 'Your session ended. Sign in again.', failure: undefined }));
    loadSession().then(
      (answer) => setState({ loading: false, person: answer?.person, notice: undefined, failure: undefined }),
      (error: unknown) => setState({ loading: false, person: undefined, notice: undefined, failure: error instanceof Error ? error.message : String(error) }),
    );
  }, []);

  const signedIn = useCallback(async (answer: SessionAnswer) => {
    setCsrfToken(answer.csrf_token);
    // The sign-in answer's person is re-read from /admin/v1/me, whose memberships carry the allowed operations.
    const person = await loadPerson();
    setState({ loading: false, person, notice: undefined, failure: undefined });
    if (location.path === '/' || location.path === '/sign-in' || location.path.startsWith('/link/')) navigate('/overview', { replace: true });
  }, [location.path]);

  const session = useMemo<Session>(() => ({
    person: state.person,
    signedIn,
    async signOut(everywhere = false) {
      try {
        await endSession(everywhere);
      } finally {
        setState({ loading: false, person: undefined, notice: everywhere ? 'Signed out on every device.' : 'Signed out.', failure: undefined });
      }
    },
    async refresh() {
      const answer = await loadSession();
      setState((current) => ({ ...current, person: answer?.person }));
    },
  }), [state.person, signedIn]);

  const link = matchPath('/link/:token', location.path);
  let content;
  if (state.loading) content = <p class="loading" role="status">Loading…</p>;
  else if (link !== undefined) content = <LinkPage token={link.token!} />;
  else if (state.person === undefined) content = <SignInPage notice={state.notice} failure={state.failure} />;
  else content = <Shell person={state.person} />;
  return <SessionContext.Provider value={session}>{content}</SessionContext.Provider>;
}
