import type { Queryable } from '@gateway/db';
import type { Page, PageRequest, Project, ProjectStatus } from '../../common/domain/admin-records.ts';

interface ProjectRow {
  id: string;
  organisation_id: string;
  name: string;
  status: ProjectStatus;
  created_at: Date;
  key_id: string | null;
  key_hint: string | null;
  key_created_at: Date | null;
}

const selectProject = `
  SELECT p.id, p.organisation_id, p.name, p.status, p.created_at,
         k.id AS key_id, k.hint AS key_hint, k.created_at AS key_created_at
  FROM projects p
  LEFT JOIN api_keys k ON k.project_id = p.id AND k.revoked_at IS NULL`;

function toProject(row: ProjectRow): Project {
  return {
    id: row.id,
    organisationId: row.organisation_id,
    name: row.name,
    status: row.status,
    apiKey: row.key_id !== null && row.key_hint !== null && row.key_created_at !== null
      ? { id: row.key_id, hint: row.key_hint, createdAt: row.key_created_at }
      : null,
    createdAt: row.created_at,
  };
}

/** Inserts a project. */
export async function insertProject(tx: Queryable, project: { id: string; organisationId: string; name: string }): Promise<void> {
  await tx.query(
    "INSERT INTO projects (id, organisation_id, name, status) VALUES ($1, $2, $3, 'active')",
    [project.id, project.organisationId, project.name],
  );
}

/** Inserts a project's API key (its hash and display hint only; the secret is never stored). */
export async function insertApiKey(tx: Queryable, key: { id: string; projectId: string; keyHash: string; hint: string }): Promise<void> {
  await tx.query(
    'INSERT INTO api_keys (id, project_id, key_hash, hint) VALUES ($1, $2, $3, $4)',
    [key.id, key.projectId, key.keyHash, key.hint],
  );
}

/** The project with this id, with its active key's public details, or undefined. `forUpdate` locks the project row. */
export async function findProject(db: Queryable, id: string, options: { forUpdate?: boolean } = {}): Promise<Project | undefined> {
  const { rows } = await db.query<ProjectRow>(`${selectProject} WHERE p.id = $1${options.forUpdate ? ' FOR UPDATE OF p' : ''}`, [id]);
  return rows[0] ? toProject(rows[0]) : undefined;
}

/** A page of an organisation's projects in creation order, after the project `after` (which must exist). */
export async function listProjects(db: Queryable, organisationId: string, page: PageRequest): Promise<Page<Project>> {
  const { rows } = await db.query<ProjectRow>(
    `${selectProject}
     WHERE p.organisation_id = $1
       AND ($2::text IS NULL OR (p.created_at, p.id) > (SELECT a.created_at, a.id FROM projects a WHERE a.id = $2))
     ORDER BY p.created_at, p.id
     LIMIT $3`,
    [organisationId, page.after ?? null, page.limit + 1],
  );
  return { items: rows.slice(0, page.limit).map(toProject), hasMore: rows.length > page.limit };
}

/** Writes a project's changed name or status (absent fields stay). */
export async function updateProjectFields(tx: Queryable, id: string, changes: { name?: string | undefined; status?: ProjectStatus | undefined }): Promise<void> {
  await tx.query(
    'UPDATE projects SET name = COALESCE($2, name), status = COALESCE($3, status) WHERE id = $1',
    [id, changes.name ?? null, changes.status ?? null],
  );
}

/** Revokes a project's active key (at most one); resolves the revoked keys' ids. */
export async function revokeActiveKeys(tx: Queryable, projectId: string): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    'UPDATE api_keys SET revoked_at = clock_timestamp() WHERE project_id = $1 AND revoked_at IS NULL RETURNING id', [projectId],
  );
  return rows.map((row) => row.id);
}
