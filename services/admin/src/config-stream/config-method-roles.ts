import type { configV1 } from '@gateway/contracts';
import type { MethodRoles } from '@gateway/grpc';

/**
 * Who may call each ConfigService method: the ONE table the admin's gRPC server enforces. Only
 * proxies may open the config stream (it carries every upstream credential, decrypted). A
 * method missing here is refused; config-method-roles.test.ts checks it names them all.
 */
export const configMethodRoles: MethodRoles<keyof typeof configV1.ConfigServiceService> = {
  streamConfig: ['proxy'],
};
