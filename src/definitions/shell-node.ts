/** A node of the tree the parse thread answers: the part of web-tree-sitter's Node that shell-commands.ts reads. */
export class ShellNode {
  readonly namedChildren: ShellNode[];
  constructor(
    private readonly line: string,
    private readonly raw: RawNode,
  ) {
    this.namedChildren = raw[5].map((c) => new ShellNode(line, c));
  }
  get type() {
    return this.raw[0];
  }
  get text() {
    return this.line.slice(this.raw[1], this.raw[2]);
  }
  /** Unnamed children (tokens: `$`, quotes, operators) it has besides its named ones. */
  get unnamed() {
    return this.raw[4];
  }
  childForFieldName(field: string): ShellNode | null {
    return this.namedChildren.find((c) => c.raw[3] === field) ?? null;
  }
  childrenForFieldName(field: string): ShellNode[] {
    return this.namedChildren.filter((c) => c.raw[3] === field);
  }
}
export type RawNode = [type: string, start: number, end: number, field: string | null, unnamed: number, children: RawNode[]];

/** A word's value when it has no expansion (quotes and escapes removed); null otherwise. */
export function staticText(node: ShellNode): string | null {
  switch (node.type) {
    case 'word':
    case 'number':
      return node.text.replace(/\\\n/g, '').replace(/\\(.)/gs, '$1');
    case 'raw_string':
      return node.text.slice(1, -1);
    case 'string': {
      if (node.namedChildren.some((c) => c.type !== 'string_content')) return null;
      return node.text
        .slice(1, -1)
        .replace(/\\\n/g, '')
        .replace(/\\([$`"\\])/g, '$1');
    }
    case 'concatenation': {
      let text = '';
      for (const part of node.namedChildren) {
        const value = part && staticText(part);
        if (value === null || value === undefined) return null;
        text += value;
      }
      // A concatenation's unnamed parts (a bare `$` before a quote) make it dynamic.
      return node.unnamed === 0 ? text : null;
    }
    default:
      return null;
  }
}
