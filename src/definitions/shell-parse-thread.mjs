// The parse of bash lines, on a worker thread (started by shell-parse-worker.ts): tree-sitter-bash can take
// seconds on a hostile line, and its own cancellation is checked too rarely to bound it, so the
// event loop never waits on it; a parse past its time is ended by terminating this thread.
// Answers each line's syntax tree as nested arrays: [type, start, end, field, unnamed, children],
// the named nodes only (`unnamed`: how many unnamed children a node has), or null on a syntax error.
import { createRequire } from 'node:module';
import { parentPort } from 'node:worker_threads';
import { Language, Parser } from 'web-tree-sitter';

const require = createRequire(import.meta.url);
await Parser.init({ locateFile: () => require.resolve('web-tree-sitter/tree-sitter.wasm') });
const parser = new Parser();
parser.setLanguage(await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm')));

/** The tree under the cursor's node, walked without recursion (a deep line cannot overflow the stack). */
function serialize(tree) {
  const cursor = tree.walk();
  const root = [cursor.nodeType, cursor.startIndex, cursor.endIndex, null, 0, []];
  const path = [root];
  if (cursor.gotoFirstChild()) {
    for (;;) {
      const parent = path[path.length - 1];
      let entered = false;
      if (cursor.nodeIsNamed) {
        const node = [cursor.nodeType, cursor.startIndex, cursor.endIndex, cursor.currentFieldName, 0, []];
        parent[5].push(node);
        if (cursor.gotoFirstChild()) {
          path.push(node);
          entered = true;
        }
      } else parent[4]++;
      if (entered) continue;
      while (!cursor.gotoNextSibling()) {
        if (!cursor.gotoParent() || path.length === 1) return root;
        path.pop();
      }
    }
  }
  return root;
}

parentPort.on('message', ({ id, line }) => {
  const tree = parser.parse(line);
  try {
    parentPort.postMessage({ id, tree: !tree || tree.rootNode.hasError ? null : serialize(tree) });
  } finally {
    tree?.delete();
  }
});
parentPort.postMessage({ ready: true });
