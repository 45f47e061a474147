export { disallowedAddressReason, isDisallowedAddress, isLocalHostName, unbracketed } from './address-policy.ts';
export {
  AddressRefusedError, addressRefusedCode, checkedLookup, hostAddressProblem, systemResolver,
  type ConnectLookup, type HostResolver, type ResolvedAddress,
} from './host-resolution.ts';
