/** The settings the tenancy area's rules read; tenancy/tenancy-settings.ts maps them from the environment. */
export interface TenancySettings {
  /** The platform's retention of stored Responses, seconds: an organisation's own retention may only be shorter. */
  platformResponseRetentionS: number;
}
