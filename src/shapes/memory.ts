import { z } from 'zod';

/**
 * Whose a definition's memory is (seed 001 `memory`): one folder per user, per parent task, or
 * one for the definition, always within a tenant.
 */
export const memoryScopeSchema = z.enum(['user', 'parent', 'definition']);
export type MemoryScope = z.infer<typeof memoryScopeSchema>;

/** The memory folder a task works with: its scope, the key (user id, parent task id, or `-`) and the definition's type. */
export const taskMemorySchema = z.object({
  scope: memoryScopeSchema,
  key: z.string().describe('the user id (user), the parent task id (parent) or "-" (definition)'),
  type: z.string().describe('the subagent type whose memory it is'),
  url: z.string().describe('its files over HTTP: GET, PUT or DELETE <url><path>'),
});
export type TaskMemory = z.infer<typeof taskMemorySchema>;

/** The key of a memory of `scope`, for a task of that user and parent. */
export function memoryKeyOf(scope: MemoryScope, task: { userId: string; parentTaskId: string }): string {
  return scope === 'user' ? task.userId : scope === 'parent' ? task.parentTaskId : '-';
}

/** Where a memory's files are read and written over HTTP. */
export const memoryUrl = (m: { scope: MemoryScope; key: string; type: string }) =>
  `/memory/${m.scope}/${encodeURIComponent(m.key)}/${encodeURIComponent(m.type)}/files/`;
