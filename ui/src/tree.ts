/** What the tree needs of a task: its id and the task that started it (nesting). */
export interface Node {
  id: string;
  parentTask?: string | null;
}

/**
 * Tasks in tree order: each task the list has whose parent task it does not have (a root, or a
 * child whose lead is on another page) in the list's order, each followed by its children and
 * theirs, oldest first, one level deeper (`depth`).
 */
export function treeOf<T extends Node>(tasks: T[]): Array<{ task: T; depth: number }> {
  const here = new Set(tasks.map((t) => t.id));
  const children = new Map<string, T[]>();
  for (const t of tasks) {
    if (!t.parentTask || !here.has(t.parentTask)) continue;
    const list = children.get(t.parentTask) ?? [];
    list.push(t);
    children.set(t.parentTask, list);
  }
  const out: Array<{ task: T; depth: number }> = [];
  const visit = (t: T, depth: number) => {
    out.push({ task: t, depth });
    // Ids are ULIDs: their order is the order they were made in.
    for (const c of [...(children.get(t.id) ?? [])].sort((a, b) => (a.id < b.id ? -1 : 1))) visit(c, depth + 1);
  };
  for (const t of tasks) if (!t.parentTask || !here.has(t.parentTask)) visit(t, 0);
  return out;
}

/** `root`'s descendants among `tasks`, in tree order, one level below it being depth 1. */
export function descendantsOf<T extends Node>(root: string, tasks: T[]): Array<{ task: T; depth: number }> {
  const tree = treeOf(tasks);
  const at = tree.findIndex((n) => n.task.id === root);
  if (at < 0) return [];
  const base = tree[at].depth;
  const out: Array<{ task: T; depth: number }> = [];
  for (const n of tree.slice(at + 1)) {
    if (n.depth <= base) break;
    out.push({ task: n.task, depth: n.depth - base });
  }
  return out;
}
