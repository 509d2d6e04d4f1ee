import { bashTool } from './bash';
import { editFileTool } from './edit-file';
import { globTool } from './glob';
import { grepTool } from './grep';
import { listFilesTool } from './list-files';
import { readFileTool } from './read-file';
import type { WorkspaceTool } from './tool-types';
import { writeFileTool } from './write-file';

/** Every workspace tool by its contract name (`complete` is built per task, see agent/complete-tool). */
export const workspaceTools: Record<string, WorkspaceTool> = Object.fromEntries(
  [readFileTool, writeFileTool, editFileTool, listFilesTool, globTool, grepTool, bashTool].map((t) => [t.name, t]),
);

export const workspaceToolNames = Object.keys(workspaceTools);
export const readOnlyToolNames = workspaceToolNames.filter((n) => workspaceTools[n].readOnly);
