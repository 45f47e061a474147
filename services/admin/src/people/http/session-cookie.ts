import { parseCookie, stringifySetCookie } from 'cookie';

/**
 * The session cookie's name over TLS and on loopback: `__Host-` makes the browser refuse it
 * unless it is Secure, host-only and Path=/, so no sibling domain or plain-http page can plant it.
 */
const hostSessionCookieName = '__Host-gw_session';

/**
 * The name used over plain http to a non-loopback host (development on a LAN address only):
 * a browser drops Secure cookies there, so this one is not Secure and cannot carry the prefix.
 */
const plainSessionCookieName = 'gw_session';

/** The device cookie's names (docs/people.md, "Sign-in throttling"), Secure with the `__Host-` prefix or plain, as the session cookie's. */
const hostDeviceCookieName = '__Host-gw_device';
const plainDeviceCookieName = 'gw_device';

/** Where a request came in: whether over TLS (directly or via a trusted proxy), and its Host header. */
export interface CookieContext {
  secure: boolean;
  host: string;
}

/**
 * Whether a Host names this machine's loopback, which browsers treat as a secure context even
 * over http (and so accept Secure cookies from): localhost, *.localhost, 127.0.0.0/8 and [::1].
 */
function isLoopbackHost(host: string): boolean {
  if (!URL.canParse(`http://${host}`)) return false;
  const hostname = new URL(`http://${host}`).hostname;
  return hostname === 'localhost' || hostname.endsWith('.localhost') || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** Whether the session cookie is Secure (and so named `__Host-gw_session`): over TLS or on loopback. */
function usesSecureCookie(context: CookieContext): boolean {
  return context.secure || isLoopbackHost(context.host);
}

/** The session token a Cookie header carries ('' header: none); the `__Host-` cookie wins over the plain one. */
export function sessionTokenOf(cookieHeader: string): string | undefined {
  if (cookieHeader === '') return undefined;
  const cookies = parseCookie(cookieHeader);
  return cookies[hostSessionCookieName] ?? cookies[plainSessionCookieName];
}

/** The Set-Cookie value that hands a browser its session: HttpOnly, SameSite=Lax, Path=/, Secure where possible. */
export function sessionSetCookie(token: string, maxAgeSeconds: number, context: CookieContext): string {
  const secure = usesSecureCookie(context);
  return stringifySetCookie({
    name: secure ? hostSessionCookieName : plainSessionCookieName,
    value: token,
    path: '/',
    httpOnly: true,
    sameSite: 'lax',
    secure,
    maxAge: Math.max(0, Math.floor(maxAgeSeconds)),
  });
}

/** The device tokens a Cookie header's device cookie carries ('' header or no cookie: none); the `__Host-` cookie wins. */
export function deviceTokensOf(cookieHeader: string): string[] {
  if (cookieHeader === '') return [];
  const cookies = parseCookie(cookieHeader);
  const value = cookies[hostDeviceCookieName] ?? cookies[plainDeviceCookieName];
  return value === undefined || value === '' ? [] : value.split('.');
}

/**
 * The Set-Cookie value of the device cookie: the browser's device tokens (one per email it signed
 * in as, `.`-separated), HttpOnly, SameSite=Strict (only the dashboard's own sign-in sends it),
 * Path=/, Secure where the session cookie is, kept `maxAgeSeconds`.
 */
export function deviceSetCookie(tokens: readonly string[], maxAgeSeconds: number, context: CookieContext): string {
  const secure = usesSecureCookie(context);
  return stringifySetCookie({
    name: secure ? hostDeviceCookieName : plainDeviceCookieName,
    value: tokens.join('.'),
    path: '/',
    httpOnly: true,
    sameSite: 'strict',
    secure,
    maxAge: Math.max(0, Math.floor(maxAgeSeconds)),
  });
}

/** Set-Cookie values that delete the session cookie under both names. */
export function clearedSessionCookies(): string[] {
  return [
    stringifySetCookie({ name: hostSessionCookieName, value: '', path: '/', httpOnly: true, sameSite: 'lax', secure: true, maxAge: 0 }),
    stringifySetCookie({ name: plainSessionCookieName, value: '', path: '/', httpOnly: true, sameSite: 'lax', maxAge: 0 }),
  ];
}

/**
 * Whether a browser request to the sign-in routes comes from the dashboard's own origin: a
 * request without Origin (curl, scripts) passes; any other origin is refused (login CSRF).
 */
export function sameOriginRequest(origin: string | undefined, host: string): boolean {
  if (origin === undefined) return true;
  if (!URL.canParse(origin)) return false;
  return new URL(origin).host === host;
}
