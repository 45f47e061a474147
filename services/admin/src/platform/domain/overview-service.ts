import type { Database } from '@gateway/db';
import type { Actor } from '../../common/domain/actor.ts';
import type { Balance, Project, ProjectSpend, UsageRecord, UsageSummaryRow } from '../../common/domain/admin-records.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';
import { listProjects } from '../../tenancy/domain/project-store.ts';

/** Days the Overview covers when no window is given. */
const overviewDefaultDays = 30;
/** Usage records the Overview lists as recent requests. */
const overviewRecentRequests = 20;

/** Everything the dashboard's Overview shows, read in one call; money in µ₹. */
export interface Overview {
  /** The window of the usage figures, ms since the epoch: from inclusive, to exclusive. */
  fromMs: number;
  toMs: number;
  balance: Balance;
  /** The current calendar month (Asia/Kolkata) of the project spends, e.g. `2026-11`. */
  month: string;
  /** Every project of the organisation (oldest first) with its spend this month against its budget. */
  projects: Array<{ project: Project; spend: ProjectSpend }>;
  /** Usage in the window by day (Asia/Kolkata) and model. */
  usageByDay: UsageSummaryRow[];
  /** Usage in the window by day, model and project. */
  usageByProject: UsageSummaryRow[];
  /** The most recent usage records (not bound by the window), newest first. */
  recent: UsageRecord[];
}

/** What the Overview read is built from. */
export interface OverviewServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
}

/**
 * The Overview's one read: balance, every project's month spend (one ListProjectSpends, not one
 * read per project), the window's usage by day/model and by project, and the recent requests.
 */
export function createOverviewService({ db, ledger, access }: OverviewServiceDeps) {
  return {
    /** The organisation at a glance for the window (default: the last 30 days up to now). */
    async getOverview(actor: Actor, organisationId: string, window: { fromMs?: number | undefined; toMs?: number | undefined }): Promise<Overview> {
      await access.requireOrganisation(actor, organisationId);
      const toMs = window.toMs ?? Date.now();
      const fromMs = window.fromMs ?? toMs - overviewDefaultDays * 86_400_000;
      const projectsRead = (async () => {
        const projects: Project[] = [];
        for (let after: string | undefined; ;) {
          const page = await listProjects(db, organisationId, { limit: 500, after });
          projects.push(...page.items);
          if (!page.hasMore) return projects;
          after = page.items.at(-1)!.id;
        }
      })();
      const [balance, spends, projects, usageByDay, usageByProject, recent] = await Promise.all([
        ledger.getBalance(organisationId),
        ledger.listProjectSpends(organisationId),
        projectsRead,
        ledger.summarizeUsage({ organisationId, fromMs, toMs }),
        ledger.summarizeUsage({ organisationId, fromMs, toMs, groupByProject: true }),
        ledger.listUsage({ organisationId, pageSize: overviewRecentRequests }),
      ]);
      const byId = new Map(spends.projects.map((spend) => [spend.projectId, spend]));
      return {
        fromMs, toMs, balance, month: spends.month,
        projects: projects.map((project) => ({
          project,
          spend: byId.get(project.id) ?? { projectId: project.id, month: spends.month, settledMicros: 0n, heldMicros: 0n, budget: null, softAlertRaised: false },
        })),
        usageByDay, usageByProject, recent: recent.records,
      };
    },
  };
}
