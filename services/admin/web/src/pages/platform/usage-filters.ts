import { istWindowQuery } from '../common/ist-dates.ts';

/** The usage explorer's filter form as the person typed it (empty string: no filter). */
export interface UsageFilterForm {
  /** A project id, or '' for every project. */
  projectId: string;
  /** A gateway model slug, or '' for every model. */
  model: string;
  /** First IST day included ("YYYY-MM-DD"), or ''. */
  fromDay: string;
  /** Last IST day included ("YYYY-MM-DD"), or ''. */
  toDay: string;
}

/** The filter query of /usage and /usage/export (from/to: ms since the epoch, to exclusive), or why the form cannot make one. */
export type UsageFilterQuery =
  | { ok: true; query: Record<string, string> }
  | { ok: false; problem: string };

/**
 * Turns the filter form into the one query both the list and the CSV export send, so the
 * export holds exactly the records the list shows. The "to" day is inclusive in the form, so
 * its bound is the start of the next IST day.
 */
export function usageFilterQuery(form: UsageFilterForm): UsageFilterQuery {
  const query: Record<string, string> = {};
  if (form.projectId !== '') query.project_id = form.projectId;
  const model = form.model.trim();
  if (model !== '') query.model = model;
  const window = istWindowQuery(form.fromDay, form.toDay);
  if (!window.ok) return window;
  return { ok: true, query: { ...query, ...window.query } };
}
