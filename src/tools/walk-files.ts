import fg from 'fast-glob';

export interface WalkOptions {
  /** Real path of the folder to search from. */
  cwd: string;
  pattern: string;
  onlyFiles: boolean;
  max: number;
}

/**
 * Paths under `cwd` matching a glob, relative to `cwd`, sorted. Symbolic links are never followed,
 * so a walk cannot leave the workspace; linked files are reported only when `onlyFiles` is false.
 */
export async function walkFiles(opts: WalkOptions): Promise<{ paths: string[]; capped: boolean }> {
  if (opts.pattern.split('/').includes('..') || opts.pattern.startsWith('/')) {
    throw new Error('glob patterns are relative to the workspace and may not contain ".." or start with "/"');
  }
  const paths: string[] = [];
  let capped = false;
  const stream = fg.stream(opts.pattern, {
    cwd: opts.cwd,
    dot: true,
    followSymbolicLinks: false,
    onlyFiles: opts.onlyFiles,
    objectMode: true,
    suppressErrors: true,
    ignore: ['**/.git/**', '**/node_modules/**'],
  });
  for await (const entry of stream as AsyncIterable<fg.Entry>) {
    if (opts.onlyFiles && entry.dirent.isSymbolicLink()) continue;
    if (paths.length >= opts.max) {
      capped = true;
      (stream as unknown as { destroy(): void }).destroy();
      break;
    }
    paths.push(entry.path);
  }
  return { paths: paths.sort(), capped };
}
