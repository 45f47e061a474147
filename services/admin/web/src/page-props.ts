/** The role the signed-in person has in the organisation shown: a member's role, or "platform" for a platform admin. */
export type PageRole = 'viewer' | 'developer' | 'owner' | 'platform';

/** What the shell hands every page. */
export interface PageProps {
  /** The organisation chosen in the header's switcher; undefined when the person sees none. */
  organisationId: string | undefined;
  /** The person's role there; undefined without an organisation. */
  role: PageRole | undefined;
  /** Parameters of the route (e.g. `token` of #/link/:token) and of the hash's query string. */
  params: Record<string, string>;
}

/** Whether `role` may do what needs at least `least` (platform admins may do everything). */
export function roleAllows(role: PageRole | undefined, least: 'viewer' | 'developer' | 'owner'): boolean {
  if (role === undefined) return false;
  if (role === 'platform') return true;
  const order = ['viewer', 'developer', 'owner'];
  return order.indexOf(role) >= order.indexOf(least);
}
