import { randomBytes } from 'node:crypto';

/** Prefixes of the admin's resource ids, e.g. `org_3f…`. */
const idPrefixes = {
  organisation: 'org_',
  project: 'proj_',
  apiKey: 'key_',
  adminToken: 'adm_',
  person: 'per_',
  invitation: 'inv_',
  alert: 'alrt_',
  webhookDelivery: 'whd_',
  topUpPackage: 'pkg_',
  topUp: 'top_',
  taxDocument: 'doc_',
  refund: 'rfd_',
  paymentReversal: 'prv_',
  upstreamDeployment: 'udep_',
} as const;

/** The kind of a resource id, named after what it identifies. */
export type IdKind = keyof typeof idPrefixes;

const idRandomBytes = 12; // 24 lowercase hex characters

/** A fresh random id of a kind: its prefix and 24 lowercase hex characters. */
export function newId(kind: IdKind): string {
  return idPrefixes[kind] + randomBytes(idRandomBytes).toString('hex');
}

/** Whether a value has the exact shape of an id of a kind (says nothing about existence). */
export function isId(kind: IdKind, value: string): boolean {
  return value.length === idPrefixes[kind].length + idRandomBytes * 2
    && value.startsWith(idPrefixes[kind])
    && /^[0-9a-f]+$/.test(value.slice(idPrefixes[kind].length));
}
