/**
 * A scripted MCP server over stdio, built with the official SDK's server side and run as a real
 * process (as an npm-installed MCP server would be), for the tests of definitions' `mcpServers`:
 *
 *   echo         answers `echo: <text>`
 *   where        writes `mcp-was-here.txt` in its working folder and answers that folder
 *   env_names    answers the names of its environment variables
 *   slow         waits until cancelled; then writes `mcp-cancelled.txt` in its folder
 *   fail         answers a tool error (isError) `it failed on purpose`
 *   crash        writes to stderr and exits with code 5 mid-call
 *   fetch_url    GETs an http:// URL, through HTTP_PROXY when it is set (as curl would), and
 *                answers `<status> <body>` (or the error)
 *
 * With MCP_SCRIPTED_BROKEN set in its environment it writes to stderr and exits before answering
 * `initialize`.
 */
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

if (process.env.MCP_SCRIPTED_BROKEN) {
  process.stderr.write('scripted MCP server: broken on purpose\n');
  process.exit(2);
}

const server = new McpServer({ name: 'scripted-mcp', version: '1.0.0' });
const text = (t: string) => ({ content: [{ type: 'text' as const, text: t }] });

server.registerTool('echo', { description: 'Echoes a text', inputSchema: { text: z.string() } }, async ({ text: t }) => text(`echo: ${t}`));
server.registerTool('where', { description: 'Writes a marker file in its folder and says which folder' }, async () => {
  writeFileSync('mcp-was-here.txt', 'written by the MCP server\n');
  return text(process.cwd());
});
server.registerTool('env_names', { description: 'Names of its environment variables' }, async () => text(Object.keys(process.env).sort().join(',')));
// A tool without an input schema gets the request's `extra` as its only argument.
server.registerTool('slow', { description: 'Waits until cancelled' }, async (extra) => {
  await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
  writeFileSync('mcp-cancelled.txt', 'cancelled\n');
  return text('cancelled');
});
server.registerTool('fail', { description: 'Answers a tool error' }, async () => ({ ...text('it failed on purpose'), isError: true }));
server.registerTool('crash', { description: 'Exits mid-call' }, async () => {
  process.stderr.write('scripted MCP server: crashing now\n');
  process.exit(5);
});

server.registerTool('fetch_url', { description: 'GETs an http:// URL', inputSchema: { url: z.string() } }, async ({ url }) => {
  const target = new URL(url);
  const proxy = process.env.HTTP_PROXY ? new URL(process.env.HTTP_PROXY) : null;
  // Through a proxy, the request line carries the whole URL.
  const via = proxy
    ? { host: proxy.hostname, port: proxy.port, path: url, headers: { host: target.host } }
    : { host: target.hostname, port: target.port, path: `${target.pathname}${target.search}` };
  const answer = await new Promise<string>((resolve) => {
    const req = request({ ...via, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve(`${res.statusCode} ${body}`));
    });
    req.on('error', (err) => resolve(`error ${err.message}`));
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
  return text(answer);
});

await server.connect(new StdioServerTransport());
