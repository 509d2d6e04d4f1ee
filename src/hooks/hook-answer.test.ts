import { describe, expect, it } from 'vitest';
import { commandAnswer, MAX_REASON_CHARS, readAnswer } from './hook-answer.ts';
import { hookMatches, hooksSchema } from './hook-spec.ts';

const ok = (stdout: string, exitCode = 0, stderr = '') => ({ exitCode, stdout, stderr, truncated: { stdout: false } });

describe('a hook’s answer', () => {
  it('blocks on exit 2 with its standard error, whatever its output says', () => {
    expect(commandAnswer('PreToolUse', ok('{"decision":"allow"}', 2, 'no rm -rf\n'))).toEqual({ decision: 'block', reason: 'no rm -rf' });
    expect(commandAnswer('Stop', ok('', 2))).toEqual({ decision: 'block', reason: 'blocked by a hook (exit code 2)' });
  });

  it('is a failure on any other exit code, and on an output cut for its size', () => {
    expect(commandAnswer('PreToolUse', ok('{"decision":"deny"}', 1, 'boom'))).toEqual({ decision: 'failed', reason: 'exit code 1: boom' });
    expect(commandAnswer('PreToolUse', { ...ok('{"decision":"deny"}'), truncated: { stdout: true } }).decision).toBe('failed');
  });

  it('says nothing with plain text or no output', () => {
    expect(readAnswer('PreToolUse', '')).toEqual({ decision: 'none' });
    expect(readAnswer('PostToolUse', 'formatted 3 files')).toEqual({ decision: 'none' });
    expect(readAnswer('PreToolUse', '{not json')).toEqual({ decision: 'none' });
  });

  it('reads the contract’s shape and Claude Code’s hookSpecificOutput', () => {
    expect(readAnswer('PreToolUse', '{"decision":"deny","reason":"frozen"}')).toEqual({ decision: 'deny', reason: 'frozen' });
    expect(readAnswer('PreToolUse', '{"decision":"ask","updatedInput":{"command":"ls"}}')).toEqual({ decision: 'ask', updatedInput: { command: 'ls' } });
    expect(
      readAnswer(
        'PreToolUse',
        JSON.stringify({
          hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow', permissionDecisionReason: 'fine', updatedInput: { a: 1 } },
        }),
      ),
    ).toEqual({ decision: 'allow', reason: 'fine', updatedInput: { a: 1 } });
    expect(readAnswer('PreToolUse', '{"decision":"approve"}')).toEqual({ decision: 'allow' });
    expect(readAnswer('PreToolUse', '{"updatedInput":{"a":1}}')).toEqual({ decision: 'none', updatedInput: { a: 1 } });
    // A refusal's input is not used.
    expect(readAnswer('PreToolUse', '{"decision":"block","reason":"r","updatedInput":{"a":1}}')).toEqual({ decision: 'block', reason: 'r' });
  });

  it('takes only a block after a call and at the end', () => {
    expect(readAnswer('PostToolUse', '{"decision":"block","reason":"lint"}')).toEqual({ decision: 'block', reason: 'lint' });
    expect(readAnswer('Stop', '{"decision":"approve"}')).toEqual({ decision: 'none' });
    expect(readAnswer('Stop', '{"decision":"deny"}').decision).toBe('failed');
  });

  it('fails on a decision it cannot take or an input that is not an object', () => {
    expect(readAnswer('PreToolUse', '{"decision":"maybe"}').decision).toBe('failed');
    expect(readAnswer('PreToolUse', '{"decision":7}').decision).toBe('failed');
    expect(readAnswer('PreToolUse', '{"decision":"allow","updatedInput":"ls"}').decision).toBe('failed');
  });

  it('cuts a long reason', () => {
    const { reason } = readAnswer('Stop', JSON.stringify({ decision: 'block', reason: 'x'.repeat(MAX_REASON_CHARS * 2) }));
    expect(reason!.length).toBeLessThan(MAX_REASON_CHARS + 100);
    expect(reason).toMatch(/characters cut\]$/);
  });
});

describe('hook matchers and bounds', () => {
  it('matches names, globs and alternatives', () => {
    expect(hookMatches(undefined, 'bash')).toBe(true);
    expect(hookMatches('*', 'mcp__github__create_issue')).toBe(true);
    expect(hookMatches('bash', 'bash')).toBe(true);
    expect(hookMatches('bash', 'bash2')).toBe(false);
    expect(hookMatches('mcp__github__*', 'mcp__github__create_issue')).toBe(true);
    expect(hookMatches('mcp__github__*', 'mcp__gitlab__x')).toBe(false);
    expect(hookMatches('write_file|edit_file', 'edit_file')).toBe(true);
    expect(hookMatches('write_file|', 'read_file')).toBe(false);
  });

  it('refuses a hook with both or neither of command and url, a timeout out of bounds, an unknown event or key', () => {
    expect(hooksSchema.safeParse({ PreToolUse: [{ command: 'true' }] }).success).toBe(true);
    expect(hooksSchema.safeParse({ PreToolUse: [{ command: 'true', url: 'https://x.example/h' }] }).success).toBe(false);
    expect(hooksSchema.safeParse({ Stop: [{}] }).success).toBe(false);
    expect(hooksSchema.safeParse({ Stop: [{ command: 'true', timeoutMs: 50 }] }).success).toBe(false);
    expect(hooksSchema.safeParse({ Stop: [{ command: 'true', timeoutMs: 600_001 }] }).success).toBe(false);
    expect(hooksSchema.safeParse({ Notification: [{ command: 'true' }] }).success).toBe(false);
    expect(hooksSchema.safeParse({ Stop: [{ command: 'true', type: 'command' }] }).success).toBe(false);
    expect(hooksSchema.safeParse({ PreToolUse: [{ command: 'true', matcher: 'Edit(.*)' }] }).success).toBe(false);
    expect(hooksSchema.safeParse({ PreToolUse: [{ url: 'ftp://x.example/h' }] }).success).toBe(false);
  });
});
