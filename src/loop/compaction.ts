import { streamText, type LanguageModel, type ModelMessage } from 'ai';

/** When and with which model a run compacts its conversation. */
export interface CompactionOptions {
  /** Compact before a step once the previous step's input tokens reached this. */
  atTokens: number;
  model: LanguageModel;
  modelId: string;
}

export interface CompactOptions {
  conversation: ModelMessage[];
  compaction: CompactionOptions;
  signal: AbortSignal;
  maxRetries: number;
  /** The input tokens of the step that reached the threshold. */
  beforeTokens: number;
  /** Told just before the compaction model is called (not when there is nothing to compact). */
  onCall?: () => void;
}

/** Steps kept whole at the end of a compacted conversation (each an answer and its tool results). */
const KEEP_LAST_STEPS = 2;
/** What of each message the compaction model reads, at most. */
const MAX_CHARS_PER_MESSAGE = 8_000;

const INSTRUCTIONS =
  'You compact the working memory of an agent. Summarise the conversation excerpt you are given so the agent ' +
  'can carry on without it: the goal, what was done (files read and written, commands run, findings with their ' +
  'exact paths, names and numbers), what failed and why, and what remains. Be complete about facts, brief in ' +
  'words. Answer with the summary only.';

export interface Compacted {
  /** False when there was nothing old enough to compact (the conversation is returned as it was). */
  changed: boolean;
  conversation: ModelMessage[];
  info: { beforeTokens: number; afterTokens: number; model: string };
  error: unknown;
}

/** A rough token count (4 characters a token), for the size a compacted conversation has. */
export const estimateTokens = (messages: ModelMessage[]) => Math.ceil(JSON.stringify(messages).length / 4);

/**
 * Replaces the middle of a conversation with a summary written by the compaction model. The first
 * message (the kickoff prompt) and the last steps stay whole; the cut is made before an assistant
 * message, so a tool call and its results are never separated. Nothing to compact: unchanged.
 */
export async function compact(opts: CompactOptions): Promise<Compacted> {
  const { conversation, compaction: c, beforeTokens, onCall = () => {} } = opts;
  const info = { beforeTokens, afterTokens: estimateTokens(conversation), model: c.modelId };
  const assistants = conversation.flatMap((m, i) => (m.role === 'assistant' && i > 0 ? [i] : []));
  const tailStart = assistants.length > KEEP_LAST_STEPS ? assistants[assistants.length - KEEP_LAST_STEPS] : -1;
  if (tailStart <= 1) return { changed: false, conversation, info, error: null };
  const middle = conversation.slice(1, tailStart);
  let summary = '';
  let error: unknown = null;
  onCall();
  const result = streamText({
    model: c.model,
    system: INSTRUCTIONS,
    messages: [{ role: 'user', content: middle.map(describe).join('\n\n') }],
    maxRetries: opts.maxRetries,
    abortSignal: opts.signal,
    onError: () => {},
  });
  try {
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') summary += part.text;
      else if (part.type === 'error') error ??= part.error;
    }
  } catch (err) {
    error ??= err;
  }
  if (error || opts.signal.aborted) return { changed: false, conversation, info, error: error ?? opts.signal.reason };
  const compacted: ModelMessage[] = [
    conversation[0],
    { role: 'user', content: `Summary of the earlier part of this task (older turns were compacted):\n${summary.trim()}` },
    ...conversation.slice(tailStart),
  ];
  return { changed: true, conversation: compacted, info: { ...info, afterTokens: estimateTokens(compacted) }, error: null };
}

/** One message as text for the compaction model, long contents cut. */
function describe(m: ModelMessage): string {
  const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
  const cut =
    content.length > MAX_CHARS_PER_MESSAGE
      ? `${content.slice(0, MAX_CHARS_PER_MESSAGE)} [... ${content.length - MAX_CHARS_PER_MESSAGE} more characters]`
      : content;
  return `[${m.role}] ${cut}`;
}
