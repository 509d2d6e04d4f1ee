/**
 * The minimal relay `npm run bench stream` measures the service's chunk latency against: a process
 * that only reads the model's SSE and forwards each text delta over a WebSocket. A WebSocket to
 * `/?prompt=<text>` makes one streamed chat completion with that prompt on the scripted model
 * (OPENAI_BASE_URL) and sends each text delta as `{ "type": "text.delta", "data": { "text" } }`,
 * then closes. No agent loop, no tools, no store: what any service must do at the least per chunk.
 * Prints `{ "port" }` once listening. Plain JavaScript, on bare Node, like the built service.
 */
import http from 'node:http';
import { WebSocketServer } from 'ws';

const base = process.env.OPENAI_BASE_URL;
const server = http.createServer((_req, res) => res.writeHead(404).end());
const sockets = new WebSocketServer({ server });

sockets.on('connection', (socket, req) => {
  const prompt = new URL(req.url ?? '/', 'http://relay').searchParams.get('prompt') ?? '';
  relay(socket, prompt).catch((err) => socket.close(1011, String(err.message).slice(0, 100)));
});

async function relay(socket, prompt) {
  const res = await fetch(`${base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
    body: JSON.stringify({ model: 'gpt-4.1-mini', stream: true, messages: [{ role: 'user', content: prompt }] }),
  });
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of res.body) {
    pending += decoder.decode(chunk, { stream: true });
    for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
      const event = pending.slice(0, end);
      pending = pending.slice(end + 2);
      for (const line of event.split('\n')) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const text = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
        if (text) socket.send(JSON.stringify({ type: 'text.delta', data: { text } }));
      }
    }
  }
  socket.close(1000);
}

server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
