/** The role the signed-in person has in the organisation shown: a member's role, or "platform" for a platform admin. */
export type PageRole = 'viewer' | 'developer' | 'owner' | 'platform';

/**
 * What the signed-in person may do in the organisation shown: `'all'` for a platform admin, else
 * the operationIds of the admin API their membership allows there (GET /admin/v1/me's
 * `allowed_operations`, which the server computes from its route table, so the dashboard holds no
 * copy of the role order).
 */
export type AllowedOperations = 'all' | ReadonlySet<string>;

/** What the shell hands every page. */
export interface PageProps {
  /** The organisation chosen in the header's switcher; undefined when the person sees none. */
  organisationId: string | undefined;
  /** The person's role there, for what is shown rather than done (the badge, provider costs); undefined without an organisation. */
  role: PageRole | undefined;
  /** The admin API operations the person may call there; undefined without an organisation. */
  allowed: AllowedOperations | undefined;
  /** Parameters of the route (e.g. `token` of #/link/:token) and of the hash's query string. */
  params: Record<string, string>;
}

/** Whether `allowed` includes the admin API operation `operationId` (platform admins may do everything; nobody without an organisation). */
export function allows(allowed: AllowedOperations | undefined, operationId: string): boolean {
  if (allowed === undefined) return false;
  return allowed === 'all' || allowed.has(operationId);
}
