import type { ModelMessage } from 'ai';

/** A tool result stored for the model is cut past this (as in events). */
export const MAX_STORED_TOOL_OUTPUT = 16 * 1024;

/**
 * The messages of a step as they are stored: a tool result longer than MAX_STORED_TOOL_OUTPUT
 * characters (as JSON) becomes a text that says it was cut, with its beginning. A continued or
 * resumed conversation then gives the model that shorter result.
 */
export function forStorage(messages: ModelMessage[]): ModelMessage[] {
  return messages.map((m) => {
    if (m.role !== 'tool') return m;
    return {
      ...m,
      content: m.content.map((part) => {
        if (part.type !== 'tool-result') return part;
        const json = JSON.stringify(part.output.type === 'text' || part.output.type === 'json' ? part.output.value : part.output);
        if (json === undefined || json.length <= MAX_STORED_TOOL_OUTPUT) return part;
        const value = `[result cut to ${MAX_STORED_TOOL_OUTPUT} of ${json.length} characters when it was stored]\n${json.slice(0, MAX_STORED_TOOL_OUTPUT)}`;
        return { ...part, output: { type: 'text' as const, value } };
      }),
    };
  });
}
