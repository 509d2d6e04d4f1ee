import type { SliceLane } from '../../util/turns.ts';
import { isWait, pulledStream, pullsOf, type PullSource, type Pulls } from '../../util/pulled-stream.ts';

/**
 * A provider's streamed answer with the text deltas that arrive together merged: when one read of
 * the response holds several consecutive events that only add text to the same block, they become
 * one event carrying the text of all, in order. The stream path (decoding, SSE framing, JSON and
 * its schema check, the provider's transform: the SDK's, or for OpenAI's chat openai-chat-answer.ts;
 * the guard) then runs once for them instead of once each, and so do the event's row, fan-out and
 * socket write. Nothing waits for more bytes: an event is passed on with the read that completes it,
 * so no chunk arrives later than it would have; reads of one event (the stream keeping up) pass
 * through untouched. Only plain text deltas merge; everything else (a tool call's arguments,
 * usage, the finish, a comment, an event of several `data` lines) is passed on as it came and
 * ends the run of deltas before it. Gemini's chunks carry the answer's running usage: a merged one
 * carries the last's, which is what the guard bills from when the answer is cut.
 */

/** Of a parsed event's data: the block it adds text to and the text, or null if it does anything else. */
type TextOf = (data: Record<string, unknown>, first: boolean) => { block: string; text: string } | null;
/** The event of `first` carrying `text` instead of its own (and what it must take of `last`, the run's latest). */
type WithText = (first: Record<string, unknown>, text: string, last: Record<string, unknown>) => unknown;

interface Dialect {
  /**
   * False when the event's text cannot be a text delta (a key textOf needs is missing): it is
   * passed on without being parsed. A cheap test on the raw text, true for every event textOf
   * takes; true for others too costs only their parse.
   */
  mayAddText: (raw: string) => boolean;
  textOf: TextOf;
  withText: WithText;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const onlyKeys = (o: Record<string, unknown>, allowed: readonly string[]) => Object.keys(o).every((k) => allowed.includes(k));

/** OpenAI's Chat Completions chunks (and compatible servers'): `choices[0].delta.content`. */
const openaiChat: Dialect = {
  mayAddText: (raw) => /"content"\s*:\s*"/.test(raw),
  textOf(data, first) {
    if (data.usage != null || !Array.isArray(data.choices) || data.choices.length !== 1) return null;
    const choice = data.choices[0] as unknown;
    if (!isRecord(choice) || choice.finish_reason != null || choice.logprobs != null || !isRecord(choice.delta)) return null;
    const delta = choice.delta;
    // The first of a run may carry the role; a later one that does starts a message of its own.
    if (typeof delta.content !== 'string' || !onlyKeys(delta, first ? ['content', 'role'] : ['content'])) return null;
    return { block: `${String(data.id)}/${String(choice.index)}`, text: delta.content };
  },
  withText(first, text) {
    const choice = (first.choices as Array<Record<string, unknown>>)[0];
    return { ...first, choices: [{ ...choice, delta: { ...(choice.delta as Record<string, unknown>), content: text } }] };
  },
};

/** Anthropic's Messages events: `content_block_delta` of a `text_delta`. */
const anthropicMessages: Dialect = {
  mayAddText: (raw) => raw.includes('"text_delta"'),
  textOf(data) {
    if (data.type !== 'content_block_delta' || !isRecord(data.delta)) return null;
    const delta = data.delta;
    if (delta.type !== 'text_delta' || typeof delta.text !== 'string' || !onlyKeys(delta, ['type', 'text'])) return null;
    return { block: String(data.index), text: delta.text };
  },
  withText(first, text) {
    return { ...first, delta: { type: 'text_delta', text } };
  },
};

/** Gemini's `streamGenerateContent` chunks: one candidate's one text part, its running usage kept. */
const geminiContent: Dialect = {
  mayAddText: (raw) => raw.includes('"text"'),
  textOf(data) {
    if (!onlyKeys(data, ['candidates', 'usageMetadata', 'modelVersion', 'responseId']) || !Array.isArray(data.candidates) || data.candidates.length !== 1)
      return null;
    const candidate = data.candidates[0] as unknown;
    if (!isRecord(candidate) || !onlyKeys(candidate, ['content', 'index']) || !isRecord(candidate.content)) return null;
    const content = candidate.content;
    if (!onlyKeys(content, ['role', 'parts']) || !Array.isArray(content.parts) || content.parts.length !== 1) return null;
    const part = content.parts[0] as unknown;
    if (!isRecord(part) || typeof part.text !== 'string' || !onlyKeys(part, ['text'])) return null;
    return { block: `${String(data.responseId)}/${String(candidate.index)}/${String(content.role)}`, text: part.text };
  },
  withText(first, text, last) {
    const candidate = (first.candidates as Array<Record<string, unknown>>)[0];
    const usageMetadata = last.usageMetadata ?? first.usageMetadata;
    return {
      ...first,
      candidates: [{ ...candidate, content: { ...(candidate.content as Record<string, unknown>), parts: [{ text }] } }],
      ...(usageMetadata !== undefined && { usageMetadata }),
    };
  },
};

/** The dialect of a request's streamed answer, by its path; null: passed on as it is. */
export function dialectOf(url: string): Dialect | null {
  const pathname = URL.canParse(url) ? new URL(url).pathname : '';
  if (pathname.endsWith('/chat/completions')) return openaiChat;
  if (pathname.endsWith('/messages')) return anthropicMessages;
  if (pathname.endsWith(':streamGenerateContent')) return geminiContent;
  return null;
}

/** One event of the stream: its `event:` name and its one `data:` line, or its text as it came. */
interface Parsed {
  raw: string;
  name?: string;
  data?: string;
}

function parse(raw: string): Parsed {
  // Only the common shape is looked into: an optional `event:` line and one `data:` line.
  const lines = raw.split('\n');
  if (lines.length > 2 || raw.includes('\r')) return { raw };
  let name: string | undefined;
  let data: string | undefined;
  for (const line of lines) {
    if (line.startsWith('data:') && data === undefined) data = line.slice(line.startsWith('data: ') ? 6 : 5);
    else if (line.startsWith('event:') && name === undefined) name = line.slice(line.startsWith('event: ') ? 7 : 6);
    else return { raw };
  }
  return data === undefined ? { raw } : { raw, name, data };
}

/** The events of one read, runs of text deltas of one block merged; each ends with a blank line. */
export function mergeEvents(events: string[], dialect: Dialect): string {
  let out = '';
  /** The run being merged: its first event (name and data) and its text so far. */
  let run: { name?: string; first: Record<string, unknown>; last: Record<string, unknown>; block: string; text: string; count: number; raw: string } | null =
    null;
  const flush = () => {
    if (!run) return;
    if (run.count === 1) out += `${run.raw}\n\n`;
    else out += `${run.name !== undefined ? `event: ${run.name}\n` : ''}data: ${JSON.stringify(dialect.withText(run.first, run.text, run.last))}\n\n`;
    run = null;
  };
  for (const raw of events) {
    if (!dialect.mayAddText(raw)) {
      flush();
      out += `${raw}\n\n`;
      continue;
    }
    const event = parse(raw);
    let data: unknown;
    if (event.data !== undefined && event.data.startsWith('{')) {
      try {
        data = JSON.parse(event.data);
      } catch {
        data = undefined;
      }
    }
    const text = isRecord(data) ? dialect.textOf(data, run === null) : null;
    if (text && run && run.block === text.block && run.name === event.name) {
      run.text += text.text;
      run.last = data as Record<string, unknown>;
      run.count++;
      continue;
    }
    flush();
    if (text && isRecord(data)) {
      // It may start a run only if it would merge with what follows: a first that carries a role does.
      const first = dialect.textOf(data, true);
      if (first) {
        run = { name: event.name, first: data, last: data, block: first.block, text: first.text, count: 1, raw };
        continue;
      }
    }
    out += `${raw}\n\n`;
  }
  flush();
  return out;
}

const BLANK_LINE = Buffer.from('\n\n');
const CR = 0x0d;
/**
 * Past this many bytes without an event's end the stream is passed on as it comes: an answer that
 * never ends an event would otherwise be copied and searched whole at every read.
 */
export const MAX_PENDING_BYTES = 1024 * 1024;

/**
 * The body of a streamed answer with the deltas of each read merged (mergeEvents). A read that
 * completes exactly one event is passed on as its bytes; a stream framed with CRs is passed on as
 * it is from its first CR on, and so is one with an event of over MAX_PENDING_BYTES, and one of no
 * known dialect (null) whole. One stream reading the body as its reader asks (no transform's pair
 * of streams and pipe between them: a hop fewer per read, two streams fewer per answer); the
 * body's error is its error, and a cancel of it cancels the body. With `slices`, each read goes on
 * in its turn of the event loop's slice shared by every answer: hundreds of answers whose bytes
 * arrive together are parsed in slices, the loop taking turns between them.
 */
export function mergingBody(body: ReadableStream<Uint8Array>, dialect: Dialect | null, slices?: SliceLane): ReadableStream<Uint8Array> {
  return pulledStream(mergingSource(pullsOf(body), dialect, slices));
}

/**
 * What mergingBody reads `source` into, as a source of its own: the same bytes may then go on in
 * the body they came in (util/pulled-stream.ts's `interpose`), with no stream or Response more.
 */
export function mergingSource(source: Pulls<Uint8Array>, dialect: Dialect | null, slices?: SliceLane): PullSource<Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  /** The bytes of an event not yet complete (whole characters or not). */
  let pending: Buffer = Buffer.alloc(0);
  let asItCame = false;
  let cancelled = false;
  /** What of a read goes on now: null while it completes no event. */
  const merged = (chunk: Uint8Array): Uint8Array | null => {
    if (asItCame || dialect === null) return chunk;
    const read = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const bytes = pending.length === 0 ? read : Buffer.concat([pending, read]);
    if (read.includes(CR)) {
      asItCame = true;
      pending = Buffer.alloc(0);
      return bytes;
    }
    const last = bytes.lastIndexOf(BLANK_LINE);
    if (last < 0 && bytes.length > MAX_PENDING_BYTES) {
      asItCame = true;
      pending = Buffer.alloc(0);
      return bytes;
    }
    if (last < 0) {
      pending = Buffer.from(bytes);
      return null;
    }
    const complete = bytes.subarray(0, last + 2);
    pending = Buffer.from(bytes.subarray(last + 2));
    if (complete.indexOf(BLANK_LINE) === last) return complete;
    // Complete events only: every character in them is whole.
    const events = decoder.decode(complete.subarray(0, last)).split('\n\n');
    // Fewer than two that may add text: nothing merges, the bytes go on as they came. (The
    // count stops at two: under load a read holds many, and mergeEvents tests each again.)
    let mayMerge = 0;
    for (let i = 0; i < events.length && mayMerge < 2; i++) if (dialect.mayAddText(events[i])) mayMerge++;
    if (mayMerge < 2) return complete;
    return encoder.encode(mergeEvents(events, dialect));
  };
  /** A merged read waiting for its turn of the slice (`slices`): what the next call hands on. */
  let due: Uint8Array | null = null;
  let sourceEnded = false;
  return {
    next() {
      if (cancelled) return null;
      if (due) {
        const out = due;
        due = null;
        return out;
      }
      for (;;) {
        if (sourceEnded) return null;
        const value = source.next();
        if (isWait(value)) return value;
        if (value === null) {
          sourceEnded = true;
          const rest = pending;
          pending = Buffer.alloc(0);
          return rest.length > 0 ? rest : null;
        }
        const out = merged(value);
        if (!out) continue;
        const turn = slices?.enter();
        if (!turn) return out;
        due = out;
        return turn;
      }
    },
    cancel: (reason) => {
      cancelled = true;
      return source.cancel(reason);
    },
  };
}
