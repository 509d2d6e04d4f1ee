/**
 * Newer / Older over a keyset-paged list: `cursors` is the stack of the pages' cursors read so far
 * (empty on the first page), `next` the current page's `nextCursor`.
 */
export function Pager({ cursors, setCursors, next }: { cursors: string[]; setCursors: (c: string[]) => void; next: string | null | undefined }) {
  return (
    <div class="pager">
      <button disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
        Newer
      </button>
      <button disabled={!next} onClick={() => next && setCursors([...cursors, next])}>
        Older
      </button>
    </div>
  );
}
