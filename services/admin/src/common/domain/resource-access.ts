import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { canSeeOrganisation, type Actor } from './actor.ts';
import type { Organisation, Project } from './admin-records.ts';
import { isId } from './ids.ts';
import { findOrganisation } from '../../tenancy/domain/organisation-store.ts';
import { findProject } from '../../tenancy/domain/project-store.ts';

/** Only a value shaped like one of our ids is echoed back: anything else might be a pasted secret. */
const echoableIdPattern = /^[a-z]{1,8}_[0-9a-f]{24}$/;

/** The not_found answer for an id an actor may not see or that does not exist (the two look the same). */
export function notFound(what: string, id: string, param: string): GatewayError {
  const publicMessage = echoableIdPattern.test(id) ? `No ${what} has the id "${id}".` : `No ${what} has this id.`;
  return new GatewayError('not_found', { publicMessage, param });
}

/** The look-ups every aggregate uses to find what an actor may see (see createResourceAccess). */
export type ResourceAccess = ReturnType<typeof createResourceAccess>;

/**
 * The organisation and project look-ups shared by the aggregates: an organisation token sees
 * only its organisation, and anything else answers not_found exactly as if it did not exist.
 */
export function createResourceAccess(db: Database) {
  return {
    /**
     * The organisation, if the actor may see it; not_found otherwise (unknown and foreign look the
     * same), naming `options.param` (default `id`, the path's) as the field that named it.
     */
    async requireOrganisation(actor: Actor, id: string, tx: Queryable = db, options: { forUpdate?: boolean; param?: string } = {}): Promise<Organisation> {
      const organisation = isId('organisation', id) && canSeeOrganisation(actor, id) ? await findOrganisation(tx, id, options) : undefined;
      if (!organisation) throw notFound('organisation', id, options.param ?? 'id');
      return organisation;
    },

    /** The project, if the actor may see its organisation; not_found otherwise. */
    async requireProject(actor: Actor, id: string, tx: Queryable = db, options: { forUpdate?: boolean } = {}): Promise<Project> {
      const project = isId('project', id) ? await findProject(tx, id, options) : undefined;
      if (!project || !canSeeOrganisation(actor, project.organisationId)) throw notFound('project', id, 'id');
      return project;
    },

    /** The project named by a filter must belong to this organisation (not_found otherwise). */
    async requireProjectOf(actor: Actor, organisationId: string, projectId: string): Promise<void> {
      const project = isId('project', projectId) ? await findProject(db, projectId) : undefined;
      if (!project || project.organisationId !== organisationId || !canSeeOrganisation(actor, organisationId)) {
        throw notFound('project of this organisation', projectId, 'project_id');
      }
    },
  };
}
