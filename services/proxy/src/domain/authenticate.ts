import { GatewayError } from '@gateway/errors';
import { bearerTokenOf, hashesEqual, hashSecret, isWellFormedSecret } from '@gateway/secrets';
import type { ConfigSnapshot, OrganisationEntry, ProjectEntry } from './config-snapshot.ts';

/** Who is calling: the key's id, its project and its organisation. */
export interface AuthenticatedCaller {
  keyId: string;
  project: ProjectEntry;
  organisation: OrganisationEntry;
}

/**
 * Checks the bearer API key of an inference request against the snapshot. A malformed key
 * (prefix, length or checksum wrong) is refused before any lookup. Every failure to identify
 * the caller is the same 401, so an answer never tells whether a key, project or organisation
 * exists; only a known key of a suspended organisation learns more (403).
 */
export function authenticate(snapshot: ConfigSnapshot, authorizationHeader: string | undefined): AuthenticatedCaller {
  const token = bearerTokenOf(authorizationHeader);
  if (token === undefined) {
    throw new GatewayError('invalid_api_key', {
      publicMessage: 'Missing API key. Send it as "Authorization: Bearer <key>".',
    });
  }
  if (!isWellFormedSecret('apiKey', token)) throw new GatewayError('invalid_api_key', { internalMessage: 'malformed API key' });

  const presentedHash = hashSecret(token);
  const key = snapshot.keysByHash.get(presentedHash);
  // The map lookup finds the candidate; the constant-time comparison is what decides.
  if (key === undefined || !hashesEqual(presentedHash, key.keyHash)) {
    throw new GatewayError('invalid_api_key', { internalMessage: 'unknown API key' });
  }
  const project = snapshot.projectsById.get(key.projectId);
  if (project === undefined || project.disabled) {
    throw new GatewayError('invalid_api_key', { internalMessage: `project ${key.projectId} missing or disabled` });
  }
  const organisation = snapshot.organisationsById.get(project.organisationId);
  if (organisation === undefined) {
    throw new GatewayError('invalid_api_key', { internalMessage: `organisation ${project.organisationId} missing` });
  }
  if (organisation.status !== 'active') {
    throw new GatewayError('organisation_suspended', { internalMessage: `organisation ${organisation.id} suspended` });
  }
  return { keyId: key.keyId, project, organisation };
}
