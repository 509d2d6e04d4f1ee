import net from 'node:net';

/** A TCP proxy in front of a service, whose open connections a test can cut (a network drop). */
export interface TcpProxy {
  url: string;
  /** Destroys every open connection (both sides), as a dropped network would. */
  cut(): void;
  /**
   * Stops forwarding on every open connection without closing it, as a load balancer that
   * dropped an idle connection silently would; new connections are forwarded as before.
   */
  stall(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const open = new Set<net.Socket>();
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    client.on('close', () => pairs.delete(pair));
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    cut: () => {
      for (const s of open) s.destroy();
    },
    stall: () => {
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        // What arrives from now on is read and thrown away: nothing reaches the other side.
        client.on('data', () => {});
        upstream.on('data', () => {});
      }
      pairs.clear();
    },
    close: () =>
      new Promise((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
