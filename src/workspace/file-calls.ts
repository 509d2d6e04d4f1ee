import { close, closeSync, fstat, fstatSync, lstatSync, mkdirSync, open, openSync, realpathSync, type Stats } from 'node:fs';
import { lstat, mkdir, realpath, statfs } from 'node:fs/promises';
import { promisify } from 'node:util';

/**
 * The system calls that find and open a workspace path: open, close, fstat, mkdir, lstat,
 * realpath. None reads a file's content. On a local file system each is made on the event loop,
 * synchronously: 4-5 µs, against about 60 µs for a trip through libuv's pool, and one tool call
 * makes several. On any other (NFS, EFS, CephFS, SMB, FUSE: where a call may wait on the network,
 * or for ever on a hung server) they go through the pool, as content always does.
 */
export interface FileCalls {
  /** True when the calls are made synchronously (a local file system). */
  readonly local: boolean;
  open(path: string, flags: number, mode?: number): number | Promise<number>;
  close(fd: number): void | Promise<void>;
  fstat(fd: number): Stats | Promise<Stats>;
  mkdir(path: string, opts: { mode: number; recursive?: boolean }): unknown;
  /** `lstat`, or undefined when nothing has that name. */
  lstat(path: string): Stats | undefined | Promise<Stats | undefined>;
  realpath(path: string): string | Promise<string>;
}

export const localCalls: FileCalls = {
  local: true,
  open: (path, flags, mode) => openSync(path, flags, mode),
  close: (fd) => closeSync(fd),
  fstat: (fd) => fstatSync(fd),
  mkdir: (path, opts) => mkdirSync(path, opts),
  lstat: (path) => lstatSync(path, { throwIfNoEntry: false }),
  realpath: (path) => realpathSync.native(path),
};

const openFd = promisify(open);
const closeFd = promisify(close);
const fstatFd = promisify(fstat);

export const pooledCalls: FileCalls = {
  local: false,
  open: (path, flags, mode) => openFd(path, flags, mode),
  close: (fd) => closeFd(fd),
  fstat: (fd) => fstatFd(fd),
  mkdir: (path, opts) => mkdir(path, opts),
  lstat: (path) =>
    lstat(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    }),
  realpath: (path) => realpath(path),
};

/** statfs magic numbers of the local file systems (linux/magic.h): ext2-4, XFS, btrfs, tmpfs, overlayfs, ZFS, F2FS, bcachefs, ramfs. */
const LOCAL_FILE_SYSTEMS = new Set([0xef53, 0x58465342, 0x9123683e, 0x01021994, 0x794c7630, 0x2fc12fc1, 0xf2f52010, 0xca451a4e, 0x858458f6]);

/** The calls for files under `dir`, by the file system it is on (asked once, through the pool). */
export async function fileCallsFor(dir: string): Promise<FileCalls> {
  const { type } = await statfs(dir);
  return LOCAL_FILE_SYSTEMS.has(type) ? localCalls : pooledCalls;
}
