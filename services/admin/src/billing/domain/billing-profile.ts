import { foreignCountryStateCode, gstinStates, gstStateCodesText, gstStateOf, placeOfSupplyStates } from '../../../shared/gst-states.ts';
import { gstinProblem, gstinStateCode } from '../../invoicing/domain/gstin.ts';

/**
 * An organisation's billing profile: whom its invoices are made out to. A top-up keeps a copy
 * (its billing snapshot), so a later change does not alter a purchase already made.
 */
export interface BillingProfile {
  organisationId: string;
  legalName: string;
  address: string;
  /** Two-digit GST state code of the place of supply, e.g. '29' (Karnataka). */
  stateCode: string;
  /** null when the recipient is not GST-registered. */
  gstin: string | null;
  /** The recipient's country, exactly when stateCode is 96 (outside India: an export of services); else null. */
  country: string | null;
  /** Where invoices are emailed; null: nowhere. */
  email: string | null;
  updatedAt: Date;
}

/** What an owner sets. */
export type BillingProfileInput = Omit<BillingProfile, 'organisationId' | 'updatedAt'>;

/**
 * The billing profile as a top-up stores it (`topups.billing_snapshot`) and tax documents read it
 * (the recipient): snake_case JSON.
 */
export interface BillingSnapshot {
  legal_name: string;
  address: string;
  state_code: string;
  gstin: string | null;
  /** Absent on snapshots taken before exports were invoiced (all of them Indian recipients). */
  country?: string | null;
  email: string | null;
}

/** How a refused state code is explained: the places of supply a profile may name. */
const placeOfSupplyCodesText = gstStateCodesText(placeOfSupplyStates);

/**
 * Why a code cannot be a billing profile's place of supply, or undefined when it can: it must be
 * one of the GST state codes in force, or 96 (a recipient outside India); retired codes and 99
 * (Centre Jurisdiction) are refused with the reason.
 */
function placeOfSupplyProblem(code: string): string | undefined {
  const state = gstStateOf(code);
  if (state?.use === 'in_force' || state?.use === 'foreign') return undefined;
  const reason = state === undefined ? ''
    : state.use === 'retired' ? ` (${code}, ${state.name}, is no longer issued${code === '25' ? ': use 26' : code === '28' ? ': use 37' : ''})`
      : ` (${code}, ${state.name}, is not a place of supply)`;
  return `must be a GST state code in force, ${placeOfSupplyCodesText} (e.g. 29 for Karnataka, 96 for a recipient outside India)${reason}`;
}

/**
 * The problems of a profile's state code, GSTIN and country, by field (empty when it is sound):
 * the state code must be a place of supply in force (or 96, abroad, which needs the country), the
 * GSTIN well formed with the right check character, its first two digits (its state) a code a
 * GSTIN is issued under (gstinStates says which and why) and the profile's state code.
 */
export function billingProfileProblems(input: Pick<BillingProfileInput, 'stateCode' | 'gstin'> & { country?: string | null }): Array<{ field: 'state_code' | 'gstin' | 'country'; problem: string }> {
  const problems: Array<{ field: 'state_code' | 'gstin' | 'country'; problem: string }> = [];
  const country = input.country ?? null;
  if (input.stateCode === foreignCountryStateCode && country === null) {
    problems.push({ field: 'country', problem: `is required with state_code ${foreignCountryStateCode} (a recipient outside India): export invoices name it` });
  } else if (input.stateCode !== foreignCountryStateCode && country !== null) {
    problems.push({ field: 'country', problem: `is set only with state_code ${foreignCountryStateCode} (a recipient outside India); leave it null for an Indian state` });
  }
  const stateProblem = placeOfSupplyProblem(input.stateCode);
  if (stateProblem !== undefined) problems.push({ field: 'state_code', problem: stateProblem });
  if (input.gstin !== null) {
    const problem = gstinProblem(input.gstin);
    if (problem !== undefined) problems.push({ field: 'gstin', problem });
    else if (!gstinStates.some((state) => state.code === gstinStateCode(input.gstin!))) {
      problems.push({ field: 'gstin', problem: `starts with state ${gstinStateCode(input.gstin)}, which no GSTIN a billing profile can hold is issued under (${gstStateCodesText(gstinStates)})` });
    } else if (gstinStateCode(input.gstin) !== input.stateCode) {
      problems.push({ field: 'gstin', problem: `is registered in state ${gstinStateCode(input.gstin)}, not the profile's state_code ${input.stateCode}` });
    }
  }
  return problems;
}

/** The snapshot a purchase keeps of the profile. */
export function billingSnapshotOf(profile: BillingProfile): BillingSnapshot {
  return { legal_name: profile.legalName, address: profile.address, state_code: profile.stateCode, gstin: profile.gstin, country: profile.country, email: profile.email };
}
