import type { Database } from '@gateway/db';
import { randomUUID } from 'node:crypto';
import type { Actor } from '../../common/domain/actor.ts';
import type { ProjectSpend } from '../../common/domain/admin-records.ts';
import { changedFields, recordAuditEvent } from '../../common/domain/audit-log.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';

/** A project's monthly budget: cap in µ₹, soft alert at a percentage (1..100) of it. */
export interface ProjectBudgetInput {
  monthlyCapMicros: bigint;
  softAlertPercent: number;
}

/** What the project budgets aggregate is built from. */
export interface ProjectBudgetsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
}

/**
 * Project budgets (PROJECT_BUDGET), kept by the ledger: read and set a project's monthly cap
 * (route tag "projects", under /projects/{id}/budget).
 */
export function createProjectBudgetsService({ db, ledger, access }: ProjectBudgetsServiceDeps) {
  const { requireProject } = access;

  return {
    /** A project's budget and spend this month, from the ledger. */
    async getProjectBudget(actor: Actor, id: string): Promise<ProjectSpend> {
      await requireProject(actor, id);
      return ledger.getProjectSpend(id);
    },

    /** Sets (budget) or clears (null) a project's monthly budget in the ledger; resolves the budget and spend after. */
    async setProjectBudget(actor: Actor, id: string, budget: ProjectBudgetInput | null): Promise<ProjectSpend> {
      const project = await requireProject(actor, id);
      const before = await ledger.getProjectSpend(id);
      await ledger.setProjectBudget({
        requestId: `admin-budget:${id}:${randomUUID()}`,
        organisationId: project.organisationId,
        projectId: id,
        monthlyCapMicros: budget?.monthlyCapMicros ?? 0n,
        softAlertPercent: budget?.softAlertPercent ?? 0,
      });
      const after = await ledger.getProjectSpend(id);
      const view = (spend: ProjectSpend) => ({
        monthlyCapMicros: spend.budget?.monthlyCapMicros ?? null, softAlertPercent: spend.budget?.softAlertPercent ?? null,
      });
      await recordAuditEvent(db, {
        actor, organisationId: project.organisationId, action: budget === null ? 'project.clear_budget' : 'project.set_budget',
        resourceType: 'project', resourceId: id,
        changes: changedFields(view(before), view(after), { monthlyCapMicros: 'budget.monthly_cap_micros', softAlertPercent: 'budget.soft_alert_percent' }),
      });
      return after;
    },
  };
}
