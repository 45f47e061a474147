/** What the people area is configured with (mapped from the environment by people/people-settings.ts). */
export interface PeopleSettings {
  /** A session ends after this long without use, ms. */
  sessionIdleMs: number;
  /** A session ends this long after sign-in whatever its use, ms. */
  sessionAbsoluteMs: number;
  /** How long an invitation, password-reset or setup link can be followed, ms. */
  linkTtlMs: number;
  /** The dashboard's public base URL for links; undefined: the origin the issuing request reached. */
  publicUrl: string | undefined;
  /** The email of the first platform-admin person created at first start. */
  setupEmail: string;
}
