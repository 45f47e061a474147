// The dashboard's routes live in the URL's hash (#/projects, #/link/<token>?x=y), so the admin
// serves one page and the browser's back button, bookmarks and reloads all work.
import { useEffect, useState } from 'preact/hooks';

/** Where the hash points: its path ("/projects") and query parameters. */
export interface Location {
  path: string;
  query: Record<string, string>;
}

/** Reads the current hash; an empty one is "/". */
function currentLocation(): Location {
  const hash = window.location.hash.replace(/^#/, '');
  const [path = '', search = ''] = hash.split('?', 2);
  return { path: path === '' ? '/' : path, query: Object.fromEntries(new URLSearchParams(search)) };
}

/** The current location, re-rendering the caller whenever the hash changes. */
export function useLocation(): Location {
  const [location, setLocation] = useState(currentLocation);
  useEffect(() => {
    const update = () => setLocation(currentLocation());
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return location;
}

/**
 * Goes to a dashboard path, e.g. navigate('/projects'). With `replace`, the current entry of the
 * history is replaced (a used link's token then stays out of the back button).
 */
export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (options.replace !== true) {
    window.location.hash = `#${path}`;
    return;
  }
  window.history.replaceState(null, '', `#${path}`);
  window.dispatchEvent(new HashChangeEvent('hashchange')); // replaceState fires none
}

/**
 * Matches a path against a pattern with `:name` segments ("/link/:token"); the named segments
 * (URI-decoded) when it matches, else undefined.
 */
export function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, segment] of want.entries()) {
    const actual = got[index]!;
    if (segment.startsWith(':')) {
      if (actual === '') return undefined;
      try {
        params[segment.slice(1)] = decodeURIComponent(actual);
      } catch {
        return undefined;
      }
    } else if (segment !== actual) {
      return undefined;
    }
  }
  return params;
}
