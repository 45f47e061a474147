// The dashboard's view of India's GST state codes. The list itself is the server's
// (services/admin/shared/gst-states.ts): the state picker offers exactly the places of supply a
// billing profile accepts, and any code a document carries is named the same way on both sides.
import { gstStateOf, placeOfSupplyStates, type GstState } from '../../shared/gst-states.ts';

export { foreignCountryStateCode } from '../../shared/gst-states.ts';

/** Every GST state code a billing profile may name, in code order (codes in force and 96, a recipient abroad). */
export const gstStates: readonly GstState[] = placeOfSupplyStates;

/** A state code as people read it: "29 · Karnataka" (retired codes on old documents too; the bare code when the list does not know it). */
export function gstStateLabel(code: string): string {
  const state = gstStateOf(code);
  return state === undefined ? code : `${state.code} · ${state.name}`;
}
