/**
 * A scripted Agent Client Protocol agent, built with the official SDK's agent side and run as a
 * real process over stdio, as `opencode acp` would be. What it does is chosen by a marker in its
 * prompt, so tests can drive each case of the client side precisely:
 *
 *   ACP-WRITE     plans, writes notes/acp.md through fs/write_text_file (a tool call around it),
 *                 reads it back, answers, and reports usage
 *   ACP-TERMINAL  runs `echo from-terminal` in a client terminal and answers with its output
 *   ACP-PERMISSION asks for permission and answers with the option it was given
 *   ACP-OUTSIDE   tries to write /tmp/…/escape.txt and ../escape.txt and answers with the errors
 *   ACP-HANG      answers nothing until cancelled (then stops with `cancelled`), or forever with
 *                 ACP-HANG-DEAF (it ignores session/cancel)
 *   ACP-CRASH     writes to stderr and exits with code 3 in the middle of the turn
 *   ACP-GARBAGE   writes a line that is not JSON-RPC to stdout, then nothing
 *   ACP-CHATTY    answers, then keeps writing session/update lines after its answer (300 of them)
 *   ACP-ENV       answers with the names of its environment variables
 *   ACP-EVIL-PATH plants programs named bash and bwrap (and a BASH_ENV script) in the workspace that
 *                 write MARKER=<path>, then runs a terminal with PATH, BASH_ENV and LD_PRELOAD
 *                 pointing at them and GREETING=hi; answers with the terminal's output
 */
import { Readable, Writable } from 'node:stream';
import * as acp from '@agentclientprotocol/sdk/unstable';

const sessions = new Map<string, { cwd: string; cancelled: AbortController }>();

const app = acp
  .agent({ name: 'scripted-acp-agent' })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: 'scripted-acp-agent', version: '1.0.0' },
  }))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `s-${sessions.size + 1}`;
    sessions.set(sessionId, { cwd: params.cwd, cancelled: new AbortController() });
    return { sessionId };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.cancelled.abort();
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId)!;
    const prompt = params.prompt.map((b) => (b.type === 'text' ? b.text : '')).join('');
    const update = (u: acp.SessionUpdate) => client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: u });
    const say = (text: string) => update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } });
    const file = `${session.cwd}/notes/acp.md`;

    if (prompt.includes('ACP-WRITE')) {
      await update({ sessionUpdate: 'plan', entries: [{ content: 'Write the notes', priority: 'high', status: 'in_progress' }] });
      await say('Writing the notes. ');
      await update({
        sessionUpdate: 'tool_call',
        toolCallId: 'w1',
        title: 'Write notes/acp.md',
        kind: 'edit',
        status: 'in_progress',
        rawInput: { path: file },
        locations: [{ path: file }],
      });
      await client.request(acp.methods.client.fs.writeTextFile, { sessionId: params.sessionId, path: file, content: '# Notes\nwritten over ACP\n' });
      const back = await client.request(acp.methods.client.fs.readTextFile, { sessionId: params.sessionId, path: file, line: 2, limit: 1 });
      await update({ sessionUpdate: 'tool_call_update', toolCallId: 'w1', status: 'completed', rawOutput: { readBack: back.content } });
      await say(`Wrote notes/acp.md (line 2: ${back.content}).`);
      return { stopReason: 'end_turn', usage: { totalTokens: 150, inputTokens: 120, outputTokens: 30, cachedReadTokens: 20, thoughtTokens: 5 } };
    }
    if (prompt.includes('ACP-TERMINAL')) {
      await update({ sessionUpdate: 'tool_call', toolCallId: 't1', title: 'echo', kind: 'execute', status: 'in_progress' });
      const { terminalId } = await client.request(acp.methods.client.terminal.create, {
        sessionId: params.sessionId,
        command: 'echo',
        args: ['from-terminal'],
      });
      const exit = await client.request(acp.methods.client.terminal.waitForExit, { sessionId: params.sessionId, terminalId });
      const out = await client.request(acp.methods.client.terminal.output, { sessionId: params.sessionId, terminalId });
      await client.request(acp.methods.client.terminal.release, { sessionId: params.sessionId, terminalId });
      await update({ sessionUpdate: 'tool_call_update', toolCallId: 't1', status: 'completed', rawOutput: { exitCode: exit.exitCode } });
      await say(`terminal said: ${out.output.trim()} (exit ${exit.exitCode})`);
      return { stopReason: 'end_turn' };
    }
    if (prompt.includes('ACP-PERMISSION')) {
      const answer = await client.request(acp.methods.client.session.requestPermission, {
        sessionId: params.sessionId,
        toolCall: { toolCallId: 'p1', title: 'Delete everything', rawInput: { path: '/' } },
        options: [
          { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
          { optionId: 'no', name: 'Reject', kind: 'reject_once' },
        ],
      });
      await say(`permission: ${answer.outcome.outcome === 'selected' ? answer.outcome.optionId : 'cancelled'}`);
      return { stopReason: 'end_turn' };
    }
    if (prompt.includes('ACP-OUTSIDE')) {
      const errors: string[] = [];
      for (const path of [prompt.split('OUTSIDE-PATH=')[1].trim(), `${session.cwd}/../escape.txt`]) {
        try {
          await client.request(acp.methods.client.fs.writeTextFile, { sessionId: params.sessionId, path, content: 'escaped' });
          errors.push(`${path}: written`);
        } catch {
          errors.push(`${path}: refused`);
        }
      }
      await say(errors.join('; '));
      return { stopReason: 'end_turn' };
    }
    if (prompt.includes('ACP-HANG')) {
      await say('thinking...');
      if (prompt.includes('ACP-HANG-DEAF')) await new Promise(() => {});
      await new Promise<void>((resolve) => session.cancelled.signal.addEventListener('abort', () => resolve()));
      return { stopReason: 'cancelled' };
    }
    if (prompt.includes('ACP-CRASH')) {
      await say('about to crash');
      process.stderr.write('fatal: the scripted agent crashed on purpose\n');
      setTimeout(() => process.exit(3), 50);
      await new Promise(() => {});
    }
    if (prompt.includes('ACP-CHATTY')) {
      await say('chatty');
      const line = `${JSON.stringify({ jsonrpc: '2.0', method: 'session/update', params: { sessionId: params.sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'more' } } } })}\n`;
      // Right after the answer has gone out (stdout is written synchronously to a pipe), in three bursts.
      setImmediate(() => {
        for (let i = 0; i < 3; i++) process.stdout.write(line.repeat(100));
      });
      return { stopReason: 'end_turn' };
    }
    if (prompt.includes('ACP-GARBAGE')) {
      process.stdout.write('this is not JSON-RPC\n');
      await new Promise(() => {});
    }
    if (prompt.includes('ACP-ENV')) {
      await say(Object.keys(process.env).sort().join(','));
      return { stopReason: 'end_turn' };
    }
    if (prompt.includes('ACP-EVIL-PATH')) {
      const marker = prompt.split('MARKER=')[1].trim();
      const evil = `${session.cwd}/.evil`;
      const plant =
        `mkdir -p ${evil} && printf '#!/bin/sh\necho "$0" >> ${marker}\nexec /bin/bash "$@"\n' > ${evil}/bash && ` +
        `chmod +x ${evil}/bash && cp ${evil}/bash ${evil}/bwrap && printf 'echo bash_env >> ${marker}\n' > ${evil}/rc`;
      const term = async (command: string, env: Array<{ name: string; value: string }> = []) => {
        const { terminalId } = await client.request<{ terminalId: string }>(acp.methods.client.terminal.create, { sessionId: params.sessionId, command, env });
        await client.request(acp.methods.client.terminal.waitForExit, { sessionId: params.sessionId, terminalId });
        const out = (await client.request(acp.methods.client.terminal.output, { sessionId: params.sessionId, terminalId })) as { output: string };
        await client.request(acp.methods.client.terminal.release, { sessionId: params.sessionId, terminalId });
        return out.output;
      };
      await term(plant);
      const out = await term('echo "$GREETING from $PATH"', [
        { name: 'PATH', value: `${evil}:/usr/bin:/bin` },
        { name: 'BASH_ENV', value: `${evil}/rc` },
        { name: 'ENV', value: `${evil}/rc` },
        { name: 'LD_PRELOAD', value: `${evil}/missing.so` },
        { name: 'BASH_FUNC_echo%%', value: '() { /bin/echo pwned; }' },
        { name: 'GREETING', value: 'hi' },
      ]).catch((err: Error) => `refused: ${err.message}`);
      await say(out.trim());
      return { stopReason: 'end_turn' };
    }
    await say('no scenario matched');
    return { stopReason: 'end_turn' };
  });

app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
