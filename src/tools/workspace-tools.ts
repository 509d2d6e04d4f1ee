import { bashTool } from './bash.ts';
import { editFileTool } from './edit-file.ts';
import { globTool } from './glob.ts';
import { grepTool } from './grep.ts';
import { listFilesTool } from './list-files.ts';
import { readFileTool } from './read-file.ts';
import type { WorkspaceTool } from './tool-types.ts';
import { writeFileTool } from './write-file.ts';

/** Every workspace tool by its contract name (`complete` is built per task, see loop/complete-tool). */
export const workspaceTools: Record<string, WorkspaceTool> = Object.fromEntries(
  [readFileTool, writeFileTool, editFileTool, listFilesTool, globTool, grepTool, bashTool].map((t) => [t.name, t]),
);

export const workspaceToolNames = Object.keys(workspaceTools);
export const readOnlyToolNames = workspaceToolNames.filter((n) => workspaceTools[n].readOnly);
