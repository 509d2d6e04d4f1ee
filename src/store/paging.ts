/**
 * Keyset paging: a query asked for `limit + 1` rows, newest first, answers `limit` of them and,
 * when there were more, the id of the last one as the cursor of the next page.
 */
export function nextPage<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit);
  return { rows: page, nextCursor: rows.length > limit ? page[page.length - 1].id : null };
}
