import { z } from 'zod';

/** A file a subagent handed over with `complete`, as checked on disk. */
export const artifactSchema = z.object({
  path: z.string().describe("Absolute path on the service's host (for a caller on the same host)"),
  relativePath: z.string().describe('Path relative to the workspace root, `/`-separated: what models see, and the workspace routes take'),
  size: z.number().int(),
  fsType: z.enum(['file', 'directory', 'symlink']),
  modifiedAt: z.string(),
  url: z.string().describe('Where GET downloads it'),
});
export type Artifact = z.infer<typeof artifactSchema>;

export const skippedPathSchema = z.object({
  path: z.string().describe('The path as the subagent handed it over'),
  relativePath: z.string().nullable().describe('Relative to the workspace root; null when it does not lie inside'),
  reason: z.enum(['not_found', 'outside_workspace', 'invalid_path', 'not_a_regular_file', 'unreadable']),
});
export type SkippedPath = z.infer<typeof skippedPathSchema>;

/** Why a completed task stopped. */
export const stopReasonSchema = z.enum(['complete', 'text', 'max_steps']);
export type StopReason = z.infer<typeof stopReasonSchema>;

/** A file or folder of a workspace as the workspace routes describe it: the path is relative. */
export const workspaceFileSchema = z.object({
  path: z.string().describe('Path relative to the workspace folder, `/`-separated'),
  relativePath: z.string().describe('The same as `path` (the name artifacts use)'),
  size: z.number().int(),
  fsType: z.enum(['file', 'directory', 'symlink']),
  modifiedAt: z.string(),
  url: z.string().describe('Where GET downloads it (files only)'),
});
export type WorkspaceFile = z.infer<typeof workspaceFileSchema>;

export const workspaceListingSchema = z.object({
  files: z.array(workspaceFileSchema),
  truncated: z.boolean().describe('True when the workspace holds more than the 10,000 entries listed'),
});
export type WorkspaceListing = z.infer<typeof workspaceListingSchema>;
