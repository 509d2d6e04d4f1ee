import type { LanguageModelUsage } from 'ai';
import type { TokenUsage as Usage } from '../shapes/usage.ts';

/** Maps the SDK's usage (fields may be undefined) to our integer counts. */
export function toUsage(u: LanguageModelUsage | undefined): Usage {
  const input = u?.inputTokens ?? 0;
  const output = u?.outputTokens ?? 0;
  return {
    inputTokens: input,
    outputTokens: output,
    totalTokens: u?.totalTokens ?? input + output,
    cachedInputTokens: u?.inputTokenDetails?.cacheReadTokens ?? u?.cachedInputTokens ?? 0,
    reasoningTokens: u?.outputTokenDetails?.reasoningTokens ?? u?.reasoningTokens ?? 0,
    ...((u?.inputTokenDetails?.cacheWriteTokens ?? 0) > 0 && { cacheWriteTokens: u!.inputTokenDetails.cacheWriteTokens }),
  };
}
