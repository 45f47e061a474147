import type { Page } from '../domain/admin-records.ts';

/** The JSON of one page of a cursor-paged list. */
export function listJson<Item, Json>(page: Page<Item>, view: (item: Item) => Json) {
  return { object: 'list' as const, data: page.items.map(view), has_more: page.hasMore };
}
