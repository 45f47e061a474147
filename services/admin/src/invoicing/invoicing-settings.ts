import type { AdminConfig } from '../config.ts';
import type { InvoicingSettings } from './domain/invoicing-settings.ts';

/** The invoicing settings from the admin's environment (the one place their variable names appear for the area). */
export function invoicingSettingsFrom(config: AdminConfig): InvoicingSettings {
  return {
    supplierName: config.INVOICE_SUPPLIER_NAME,
    supplierAddress: config.INVOICE_SUPPLIER_ADDRESS,
    supplierGstin: config.INVOICE_SUPPLIER_GSTIN,
    supplierStateCode: config.INVOICE_SUPPLIER_STATE_CODE,
    sac: config.INVOICE_SAC,
    gstRateBasisPoints: config.GST_RATE_BASIS_POINTS,
    documentMode: config.GST_DOCUMENT_MODE,
    exportMode: config.GST_EXPORT_MODE,
    lutReference: config.INVOICE_LUT_REFERENCE,
    serialPrefix: config.INVOICE_SERIAL_PREFIX,
  };
}
