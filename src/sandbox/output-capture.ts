/**
 * Keeps the head and the tail of a byte stream within a fixed memory budget while it streams,
 * counting what falls in between, so a 50 MB output never sits in memory to be cut afterwards.
 */
export function createOutputCapture(maxBytes: number) {
  const headMax = Math.ceil(maxBytes / 2);
  const tailMax = maxBytes - headMax;
  const head: Buffer[] = [];
  let headLen = 0;
  let tail: Buffer = Buffer.alloc(0);
  let total = 0;

  return {
    write(chunk: Buffer): void {
      total += chunk.length;
      if (headLen < headMax) {
        const take = chunk.subarray(0, headMax - headLen);
        head.push(take);
        headLen += take.length;
        chunk = chunk.subarray(take.length);
      }
      if (chunk.length === 0 || tailMax === 0) return;
      tail = chunk.length >= tailMax ? Buffer.from(chunk.subarray(chunk.length - tailMax)) : Buffer.concat([tail, chunk]).subarray(-tailMax);
    },
    /** The captured text; past the budget, head + a marker saying how many bytes were cut + tail. */
    result(): { text: string; truncated: boolean; totalBytes: number } {
      const kept = headLen + tail.length;
      const headText = Buffer.concat(head).toString('utf8');
      if (total <= kept) return { text: headText + tail.toString('utf8'), truncated: false, totalBytes: total };
      const cut = total - kept;
      return {
        text: `${headText}\n[... ${cut} bytes cut of ${total} ...]\n${tail.toString('utf8')}`,
        truncated: true,
        totalBytes: total,
      };
    },
  };
}
