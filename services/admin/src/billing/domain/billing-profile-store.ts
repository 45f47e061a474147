import type { Queryable } from '@gateway/db';
import type { BillingProfile, BillingProfileInput } from './billing-profile.ts';

/** A stored row of billing_profiles. */
interface BillingProfileRow {
  organisation_id: string;
  legal_name: string;
  address: string;
  state_code: string;
  gstin: string | null;
  country: string | null;
  email: string | null;
  updated_at: Date;
}

/** A stored row as the domain record. */
function toBillingProfile(row: BillingProfileRow): BillingProfile {
  return {
    organisationId: row.organisation_id, legalName: row.legal_name, address: row.address, stateCode: row.state_code,
    gstin: row.gstin, country: row.country, email: row.email, updatedAt: row.updated_at,
  };
}

/** The organisation's billing profile, or undefined when it has none yet. `forUpdate` locks it for the transaction. */
export async function findBillingProfile(db: Queryable, organisationId: string, options: { forUpdate?: boolean } = {}): Promise<BillingProfile | undefined> {
  const { rows } = await db.query<BillingProfileRow>(
    `SELECT organisation_id, legal_name, address, state_code, gstin, country, email, updated_at FROM billing_profiles WHERE organisation_id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [organisationId],
  );
  return rows[0] ? toBillingProfile(rows[0]) : undefined;
}

/** Creates or replaces the organisation's billing profile; the stored profile. */
export async function upsertBillingProfile(tx: Queryable, organisationId: string, input: BillingProfileInput): Promise<BillingProfile> {
  const { rows } = await tx.query<BillingProfileRow>(
    `INSERT INTO billing_profiles (organisation_id, legal_name, address, state_code, gstin, country, email)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (organisation_id) DO UPDATE SET legal_name = EXCLUDED.legal_name, address = EXCLUDED.address,
       state_code = EXCLUDED.state_code, gstin = EXCLUDED.gstin, country = EXCLUDED.country, email = EXCLUDED.email, updated_at = clock_timestamp()
     RETURNING organisation_id, legal_name, address, state_code, gstin, country, email, updated_at`,
    [organisationId, input.legalName, input.address, input.stateCode, input.gstin, input.country, input.email],
  );
  return toBillingProfile(rows[0]!);
}
