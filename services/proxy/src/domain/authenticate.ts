import { GatewayError } from '@gateway/errors';
import { bearerTokenOf, hashSecret, isWellFormedSecret } from '@gateway/secrets';
import { retiredKeyWindowMs, type ConfigSnapshot, type OrganisationEntry, type ProjectEntry } from './config-snapshot.ts';

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
 * exists; only a known key of a suspended organisation learns more (403). `attribute` is told
 * the organisation and project of a key that is known (or was rotated away within the last 7
 * days) even when it is refused, so the request log can show that refusal to its project.
 */
export function authenticate(
  snapshot: ConfigSnapshot, authorizationHeader: string | undefined, attribute?: (organisationId: string, projectId: string) => void,
): AuthenticatedCaller {
  const token = bearerTokenOf(authorizationHeader);
  if (token === undefined) {
    throw new GatewayError('invalid_api_key', {
      publicMessage: 'Missing API key. Send it as "Authorization: Bearer <key>".',
    });
  }
  if (!isWellFormedSecret('apiKey', token)) throw new GatewayError('invalid_api_key', { internalMessage: 'malformed API key' });

  // The lookup is by the SHA-256 of the presented key, never by the key, and it decides: the
  // snapshot keys its map by each entry's own hash, so an entry found is one whose hash equals
  // the presented one (a second comparison of the same two strings could not fail). The map's
  // string comparison may take longer the more leading characters of the presented hash match a
  // stored one, but that leaks nothing usable: an attacker cannot choose a SHA-256 output, so
  // learning that hash(k) shares a prefix with a stored hash brings them no closer to a key whose
  // whole hash matches (a second preimage), and a key carries 256 random bits to guess otherwise.
  const keyHash = hashSecret(token);
  const key = snapshot.keysByHash.get(keyHash);
  if (key === undefined) {
    // A key rotated away lately is refused exactly as an unknown one; only the request log learns its project.
    const retired = snapshot.retiredKeysByHash?.get(keyHash);
    if (retired !== undefined && attribute !== undefined && Date.now() - retired.retiredAtMs < retiredKeyWindowMs) {
      const organisationId = snapshot.projectsById.get(retired.projectId)?.organisationId;
      if (organisationId !== undefined) attribute(organisationId, retired.projectId);
      throw new GatewayError('invalid_api_key', { internalMessage: 'retired API key' });
    }
    throw new GatewayError('invalid_api_key', { internalMessage: 'unknown API key' });
  }
  const project = snapshot.projectsById.get(key.projectId);
  if (project !== undefined) attribute?.(project.organisationId, project.id);
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
