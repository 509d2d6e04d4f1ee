// A worktree task's copy of the workspace, and the walk that finds its changes, on a worker thread
// (see worktree.ts): thousands of files cost thousands of system calls, made here synchronously, so
// the event loop of the service never waits on them nor pays a promise per call.
//
// Every folder is opened from its parent's descriptor (`/proc/self/fd/<fd>/<name>`, Linux's
// openat for a process without one), never following a link; every file is opened non-blocking
// without following a link and checked with fstat before a byte is copied, then copied from that
// very descriptor (its /proc name reopens the file itself): a clone (FICLONE) where the filesystem
// offers one, otherwise a copy of the size fstat gave. A link is copied as the link it is, a FIFO,
// socket or device is left out, whatever was swapped in between the listing and the open.
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY, COPYFILE_FICLONE } = fs.constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;
const FILE_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
const MAX_DEPTH = 64;

const at = (fd, name) => `/proc/self/fd/${fd}/${name}`;
const markOf = (s) => ({ size: Number(s.size), ino: Number(s.ino), mtimeNs: String(s.mtimeNs), ctimeNs: String(s.ctimeNs) });
const sameMark = (a, b) => a.size === b.size && a.ino === b.ino && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;

class Limit extends Error {}

function openDir(parentFd, name) {
  try {
    return fs.openSync(at(parentFd, name), DIR_FLAGS);
  } catch {
    return null; // gone, or swapped for a link or a file since it was listed
  }
}

/** Copies the folder open as `srcFd` into `destDir` (the service's own folder, which nothing else writes yet). */
function copyTree(srcFd, destDir, prefix, depth, state) {
  for (const entry of fs.readdirSync(`/proc/self/fd/${srcFd}`, { withFileTypes: true })) {
    if (++state.entries > state.maxEntries) throw new Limit(`the workspace holds more than ${state.maxEntries} entries, too many to copy`);
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    const target = path.join(destDir, entry.name);
    if (entry.isDirectory()) {
      if (depth >= MAX_DEPTH) continue;
      const fd = openDir(srcFd, entry.name);
      if (fd === null) continue;
      try {
        fs.mkdirSync(target, { mode: 0o755 });
        copyTree(fd, target, relative, depth + 1, state);
      } finally {
        fs.closeSync(fd);
      }
    } else if (entry.isSymbolicLink()) {
      try {
        fs.symlinkSync(fs.readlinkSync(at(srcFd, entry.name)), target);
      } catch {
        // gone meanwhile
      }
    } else if (entry.isFile()) {
      let fd;
      try {
        fd = fs.openSync(at(srcFd, entry.name), FILE_FLAGS);
      } catch {
        continue;
      }
      try {
        const shared = fs.fstatSync(fd, { bigint: true });
        if (!shared.isFile()) continue;
        state.bytes += Number(shared.size);
        if (state.bytes > state.maxBytes) throw new Limit(`the workspace holds more than ${state.maxBytes} bytes, too many to copy`);
        fs.copyFileSync(`/proc/self/fd/${fd}`, target, COPYFILE_FICLONE);
        state.files[relative] = { shared: markOf(shared), copy: markOf(fs.lstatSync(target, { bigint: true })) };
      } finally {
        fs.closeSync(fd);
      }
    }
  }
}

/** The regular files below the folder open as `fd` whose marks differ from `before` (or are new). */
function changedFiles(fd, prefix, depth, state) {
  for (const entry of fs.readdirSync(`/proc/self/fd/${fd}`, { withFileTypes: true })) {
    if (++state.entries > state.maxEntries) throw new Limit(`the copy holds more than ${state.maxEntries} entries`);
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (depth >= MAX_DEPTH) continue;
      const child = openDir(fd, entry.name);
      if (child === null) continue;
      try {
        changedFiles(child, relative, depth + 1, state);
      } finally {
        fs.closeSync(child);
      }
    } else if (entry.isFile()) {
      let stat;
      try {
        stat = fs.lstatSync(at(fd, entry.name), { bigint: true });
      } catch {
        continue;
      }
      if (!stat.isFile()) continue;
      state.seen.add(relative);
      const before = state.before[relative];
      if (!before) state.added.push(relative);
      else if (!sameMark(before.copy, markOf(stat))) state.modified.push(relative);
    }
  }
}

function run({ op, root, dest, maxEntries, maxBytes, files }) {
  const rootFd = fs.openSync(root, DIR_FLAGS);
  try {
    if (op === 'copy') {
      const state = { entries: 0, bytes: 0, maxEntries, maxBytes, files: {} };
      copyTree(rootFd, dest, '', 0, state);
      return { files: state.files };
    }
    const state = { entries: 0, maxEntries, before: files, seen: new Set(), added: [], modified: [] };
    changedFiles(rootFd, '', 0, state);
    const deleted = Object.keys(files).filter((p) => !state.seen.has(p));
    return { added: state.added.sort(), modified: state.modified.sort(), deleted: deleted.sort() };
  } finally {
    fs.closeSync(rootFd);
  }
}

try {
  parentPort.postMessage({ ok: true, value: run(workerData) });
} catch (err) {
  parentPort.postMessage({
    ok: false,
    limit: err instanceof Limit,
    code: err?.code ?? null,
    message: err instanceof Limit ? err.message : String(err?.code ?? 'error'),
  });
}
