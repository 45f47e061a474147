import { gstStateOf } from '../../../shared/gst-states.ts';
import { gstinStateCode } from './gstin.ts';
import type { InvoicingSettings } from './invoicing-settings.ts';

/** GST on a GST-inclusive price, in integer paise: the split every tax document uses. */
export interface GstSplit {
  /** Value of the supply before tax, paise. */
  taxablePaise: bigint;
  /** Central tax (intra-state), paise. */
  cgstPaise: bigint;
  /** State tax (intra-state), paise. */
  sgstPaise: bigint;
  /** Integrated tax (inter-state), paise. */
  igstPaise: bigint;
  /** What the buyer pays: taxable + CGST + SGST + IGST, paise. */
  totalPaise: bigint;
}

const basisPointsPerUnit = 10_000n;

/**
 * Splits a GST-inclusive total (paise) at a rate (basis points, 1800 = 18%) into taxable value and
 * tax. taxable = round-half-up(total × 10000 / (10000 + rate)); tax = total − taxable, so the
 * parts always add up to the total. Same state (supplier state code = place of supply): CGST and
 * SGST are levied at equal rates on the same value, so they are equal: when the tax is an odd
 * number of paise, its odd paisa moves to the taxable value and CGST = SGST = tax / 2. Otherwise
 * IGST = tax.
 */
export function splitInclusiveTotal(input: { totalPaise: bigint; rateBasisPoints: number; intraState: boolean }): GstSplit {
  const { totalPaise, intraState } = input;
  if (totalPaise < 0n) throw new RangeError('a GST-inclusive total cannot be negative');
  if (!Number.isInteger(input.rateBasisPoints) || input.rateBasisPoints < 0 || input.rateBasisPoints > 10_000) {
    throw new RangeError('the GST rate must be an integer number of basis points in 0..10000');
  }
  const rate = BigInt(input.rateBasisPoints);
  const denominator = basisPointsPerUnit + rate;
  // round half up of a non-negative fraction: ⌊(2·n + d) / (2·d)⌋
  const taxablePaise = (2n * totalPaise * basisPointsPerUnit + denominator) / (2n * denominator);
  const taxPaise = totalPaise - taxablePaise;
  if (intraState) {
    const oddPaisa = taxPaise % 2n;
    const halfPaise = (taxPaise - oddPaisa) / 2n;
    return { taxablePaise: taxablePaise + oddPaisa, cgstPaise: halfPaise, sgstPaise: halfPaise, igstPaise: 0n, totalPaise };
  }
  return { taxablePaise, cgstPaise: 0n, sgstPaise: 0n, igstPaise: taxPaise, totalPaise };
}

/** The supplier settings a supplier's state is read from. */
export type SupplierStateSettings = Pick<InvoicingSettings, 'supplierGstin' | 'supplierStateCode'>;

/** The state a supplier without a GSTIN or state code is taken to be in (development documents only): Karnataka. */
const developmentSupplierStateCode = '29';

/**
 * The supplier's GST state code, which decides CGST + SGST or IGST on every document: the first two
 * digits of its GSTIN (where it is registered), else the configured supplier state code, else 29. The
 * config refuses a state code that contradicts the GSTIN, so the two never disagree here.
 */
export function supplierStateCode(settings: SupplierStateSettings): string {
  const gstin = settings.supplierGstin;
  return (gstin === undefined ? undefined : gstinStateCode(gstin)) ?? settings.supplierStateCode ?? developmentSupplierStateCode;
}

/** GST is intra-state (CGST + SGST) when the supplier's state is the place of supply; else IGST. */
export function isIntraState(supplierStateCode: string, placeOfSupplyStateCode: string): boolean {
  return supplierStateCode === placeOfSupplyStateCode;
}

/** A GST state code with its name for documents, e.g. "Karnataka (29)"; an unknown code stays as "State code 42". */
export function placeOfSupplyText(stateCode: string): string {
  const state = gstStateOf(stateCode);
  return state === undefined ? `State code ${stateCode}` : `${state.name} (${stateCode})`;
}

/** A rate in basis points as a percentage text, e.g. 1800 → "18%", 250 → "2.5%", 900 / 2 → "4.5%" (a rate, not money). */
export function formatRate(basisPoints: number): string {
  return `${basisPoints / 100}%`;
}
