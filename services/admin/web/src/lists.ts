import { api } from './api.ts';
import type { ListPage } from './api-types.ts';

/** Every item of a cursor-paged list (organisations, projects, gateway models …), following `has_more` page by page (100 a page). */
export async function listAll<Item extends { id: string }>(path: string): Promise<Item[]> {
  const items: Item[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await api.get<ListPage<Item>>(path, { limit: 100, after });
    items.push(...page.data);
    if (!page.has_more || page.data.length === 0) return items;
    after = page.data.at(-1)!.id;
  }
}
