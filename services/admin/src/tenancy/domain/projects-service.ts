import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { issueSecret } from '@gateway/secrets';
import type { Actor } from '../../common/domain/actor.ts';
import type { Page, PageRequest, Project, ProjectStatus, Propagation } from '../../common/domain/admin-records.ts';
import { changedFields, recordAuditEvent } from '../../common/domain/audit-log.ts';
import type { ConfigPublisher } from '../../common/domain/config-publisher.ts';
import { bumpConfigVersion, configChange } from '../../catalog/domain/config-snapshot.ts';
import { isId, newId } from '../../common/domain/ids.ts';
import { findProject, insertApiKey, insertProject, listProjects, revokeActiveKeys, updateProjectFields } from './project-store.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';

/** What the projects aggregate is built from. */
export interface ProjectsServiceDeps {
  db: Database;
  publisher: ConfigPublisher;
  access: ResourceAccess;
}

/** How a project's key appears in the audit log: id and hint, never the secret. */
const apiKeyAuditValue = (project: Project) => (project.apiKey === null ? null : { id: project.apiKey.id, hint: project.apiKey.hint });

/** The projects aggregate with their API keys: create, list, read, change, rotate (route tag "projects"). */
export function createProjectsService({ db, publisher, access }: ProjectsServiceDeps) {
  const { requireOrganisation, requireProject } = access;

  return {
    /**
     * Creates a project and its API key. Returns the secret (shown once; only its hash is
     * stored) after connected proxies acknowledged the version holding the key.
     */
    async createProject(actor: Actor, organisationId: string, input: { name: string }): Promise<{ project: Project; apiKey: string; propagation: Propagation }> {
      await requireOrganisation(actor, organisationId);
      const projectId = newId('project');
      const keyId = newId('apiKey');
      const issued = issueSecret('apiKey');
      const { version, project } = await db.transaction(async (tx) => {
        await insertProject(tx, { id: projectId, organisationId, name: input.name });
        await insertApiKey(tx, { id: keyId, projectId, keyHash: issued.hash, hint: issued.hint });
        const created = (await findProject(tx, projectId))!;
        await recordAuditEvent(tx, {
          actor, organisationId, action: 'project.create', resourceType: 'project', resourceId: projectId,
          changes: { ...changedFields(undefined, created, { name: 'name', status: 'status' }), api_key: { before: null, after: apiKeyAuditValue(created) } },
        });
        return { version: await bumpConfigVersion(tx, [configChange('project', projectId), configChange('api_key', keyId)]), project: created };
      });
      const propagation = await publisher.publish(version);
      return { project, apiKey: issued.secret, propagation };
    },

    /** A page of an organisation's projects in creation order. */
    async listProjects(actor: Actor, organisationId: string, page: PageRequest): Promise<Page<Project>> {
      await requireOrganisation(actor, organisationId);
      if (page.after !== undefined) {
        const after = isId('project', page.after) ? await findProject(db, page.after) : undefined;
        if (!after || after.organisationId !== organisationId) {
          throw new GatewayError('invalid_request', { publicMessage: 'Invalid request: after: no project of this organisation has this id.', param: 'after' });
        }
      }
      return listProjects(db, organisationId, page);
    },

    /** The project with this id (not_found otherwise). */
    getProject: (actor: Actor, id: string) => requireProject(actor, id),

    /**
     * Renames, disables or re-enables a project. Disabling is a hard cutover like a
     * suspension: the call returns once connected proxies refuse the project's key.
     */
    async updateProject(actor: Actor, id: string, input: { name?: string | undefined; status?: ProjectStatus | undefined }): Promise<{ project: Project; propagation: Propagation }> {
      const { version, project } = await db.transaction(async (tx) => {
        const current = await requireProject(actor, id, tx, { forUpdate: true });
        await updateProjectFields(tx, id, input);
        const updated = (await findProject(tx, id))!;
        const changes = changedFields(current, updated, { name: 'name', status: 'status' });
        await recordAuditEvent(tx, { actor, organisationId: updated.organisationId, action: 'project.update', resourceType: 'project', resourceId: id, changes });
        return { version: changes.status ? await bumpConfigVersion(tx, [configChange('project', id)]) : undefined, project: updated };
      });
      const propagation = version === undefined ? { acknowledged: true, pendingProxyIds: [] } : await publisher.publish(version);
      return { project, propagation };
    },

    /**
     * Rotates a project's API key, a hard cutover: the old key is revoked and a new one issued
     * in one transaction, and the new secret is returned only after every connected proxy has
     * acknowledged the version without the old key (or after the ack timeout, marked pending).
     */
    async rotateProjectKey(actor: Actor, id: string): Promise<{ project: Project; apiKey: string; propagation: Propagation }> {
      const issued = issueSecret('apiKey');
      const keyId = newId('apiKey');
      const { version, project } = await db.transaction(async (tx) => {
        const current = await requireProject(actor, id, tx, { forUpdate: true });
        const revokedKeyIds = await revokeActiveKeys(tx, id);
        await insertApiKey(tx, { id: keyId, projectId: id, keyHash: issued.hash, hint: issued.hint });
        const updated = (await findProject(tx, id))!;
        await recordAuditEvent(tx, {
          actor, organisationId: updated.organisationId, action: 'project.rotate_key', resourceType: 'project', resourceId: id,
          changes: { api_key: { before: apiKeyAuditValue(current), after: apiKeyAuditValue(updated) } },
        });
        const keyChanges = [...revokedKeyIds, keyId].map((ref) => configChange('api_key', ref));
        return { version: await bumpConfigVersion(tx, keyChanges), project: updated };
      });
      const propagation = await publisher.publish(version);
      return { project, apiKey: issued.secret, propagation };
    },
  };
}
