// India's GST state codes: the first two digits of a GSTIN and the "place of supply" of a document.
// The one list the admin (billing profiles, documents, config) and the dashboard (the state picker)
// both read, so they cannot disagree. Plain data with no Node or DOM types: the server imports it
// and esbuild bundles it into the dashboard.

/**
 * What a code is good for now: `in_force`, a state or union territory a billing profile may name;
 * `foreign`, 96, a recipient outside India (an export of services); `retired`, a code no longer
 * issued, kept so documents issued with it still name it; `centre`, 99, registrations under the
 * Centre's jurisdiction, which are not a place of supply.
 */
type GstStateUse = 'in_force' | 'foreign' | 'retired' | 'centre';

/** One GST state code: two digits, its name, and its use. */
export interface GstState {
  code: string;
  name: string;
  use: GstStateUse;
}

/** Every GST state code, in code order. */
const gstStates: readonly GstState[] = [
  { code: '01', name: 'Jammu and Kashmir', use: 'in_force' },
  { code: '02', name: 'Himachal Pradesh', use: 'in_force' },
  { code: '03', name: 'Punjab', use: 'in_force' },
  { code: '04', name: 'Chandigarh', use: 'in_force' },
  { code: '05', name: 'Uttarakhand', use: 'in_force' },
  { code: '06', name: 'Haryana', use: 'in_force' },
  { code: '07', name: 'Delhi', use: 'in_force' },
  { code: '08', name: 'Rajasthan', use: 'in_force' },
  { code: '09', name: 'Uttar Pradesh', use: 'in_force' },
  { code: '10', name: 'Bihar', use: 'in_force' },
  { code: '11', name: 'Sikkim', use: 'in_force' },
  { code: '12', name: 'Arunachal Pradesh', use: 'in_force' },
  { code: '13', name: 'Nagaland', use: 'in_force' },
  { code: '14', name: 'Manipur', use: 'in_force' },
  { code: '15', name: 'Mizoram', use: 'in_force' },
  { code: '16', name: 'Tripura', use: 'in_force' },
  { code: '17', name: 'Meghalaya', use: 'in_force' },
  { code: '18', name: 'Assam', use: 'in_force' },
  { code: '19', name: 'West Bengal', use: 'in_force' },
  { code: '20', name: 'Jharkhand', use: 'in_force' },
  { code: '21', name: 'Odisha', use: 'in_force' },
  { code: '22', name: 'Chhattisgarh', use: 'in_force' },
  { code: '23', name: 'Madhya Pradesh', use: 'in_force' },
  { code: '24', name: 'Gujarat', use: 'in_force' },
  // Merged into 26 on 26 January 2020 (The Dadra and Nagar Haveli and Daman and Diu (Merger of Union Territories) Act, 2019).
  { code: '25', name: 'Daman and Diu (before the 2020 merger)', use: 'retired' },
  { code: '26', name: 'Dadra and Nagar Haveli and Daman and Diu', use: 'in_force' },
  { code: '27', name: 'Maharashtra', use: 'in_force' },
  // Andhra Pradesh before Telangana was formed (2014); Andhra Pradesh registers under 37.
  { code: '28', name: 'Andhra Pradesh (before the 2014 division)', use: 'retired' },
  { code: '29', name: 'Karnataka', use: 'in_force' },
  { code: '30', name: 'Goa', use: 'in_force' },
  { code: '31', name: 'Lakshadweep', use: 'in_force' },
  { code: '32', name: 'Kerala', use: 'in_force' },
  { code: '33', name: 'Tamil Nadu', use: 'in_force' },
  { code: '34', name: 'Puducherry', use: 'in_force' },
  { code: '35', name: 'Andaman and Nicobar Islands', use: 'in_force' },
  { code: '36', name: 'Telangana', use: 'in_force' },
  { code: '37', name: 'Andhra Pradesh', use: 'in_force' },
  { code: '38', name: 'Ladakh', use: 'in_force' },
  { code: '96', name: 'Foreign Country', use: 'foreign' },
  { code: '97', name: 'Other Territory', use: 'in_force' },
  { code: '99', name: 'Centre Jurisdiction', use: 'centre' },
];

/** The code of a recipient outside India (place of supply for an export of services). */
export const foreignCountryStateCode = '96';

/**
 * The codes a billing profile may name as its place of supply, in code order: those in force and
 * 96. Not 25 or 28: no supply is made there any more (Daman and Diu is part of 26 since 2020;
 * Andhra Pradesh is 37), and a place of supply decides CGST + SGST against IGST, so a retired
 * code would put the tax under a state that no longer collects it. Not 99: Centre Jurisdiction
 * is where some registrations are administered, not a place a service is supplied to. 96 is the
 * place of supply of an export of services (a recipient outside India); 97 (Other Territory,
 * such as offshore areas) is a place of supply in its own right.
 */
export const placeOfSupplyStates: readonly GstState[] = gstStates.filter((state) => state.use === 'in_force' || state.use === 'foreign');

/**
 * The codes a GSTIN's first two digits may be here, in code order: those in force only. A GSTIN
 * the gateway reads (the supplier's, a recipient's) is a PAN-based registration in an Indian state
 * or union territory, and must match the place of supply it invoices from or to. So not 96 (a
 * recipient abroad has no GSTIN), not 99 (Centre Jurisdiction registrations, such as overseas
 * online-service suppliers, are not PAN-based and are never a party here), and not 25 or 28 (no
 * GSTIN is issued under them now: Daman and Diu registrations moved to 26 in 2020, Andhra Pradesh
 * registers under 37).
 */
export const gstinStates: readonly GstState[] = gstStates.filter((state) => state.use === 'in_force');

/** A list of codes as people read it, runs joined: "01 to 24, 26, 27, 29 to 38 or 97" (for problems and API descriptions). */
export function gstStateCodesText(states: readonly GstState[]): string {
  const runs: string[] = [];
  let index = 0;
  while (index < states.length) {
    let end = index;
    while (end + 1 < states.length && Number(states[end + 1]!.code) === Number(states[end]!.code) + 1) end += 1;
    // Two neighbours read better apart ("26, 27") than as a run.
    if (end - index >= 2) runs.push(`${states[index]!.code} to ${states[end]!.code}`);
    else for (let single = index; single <= end; single += 1) runs.push(states[single]!.code);
    index = end + 1;
  }
  return runs.length <= 1 ? runs.join('') : `${runs.slice(0, -1).join(', ')} or ${runs.at(-1)!}`;
}

/** A code's entry, or undefined for a code that is not a GST state code. */
export function gstStateOf(code: string): GstState | undefined {
  return gstStates.find((state) => state.code === code);
}
