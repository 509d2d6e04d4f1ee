import type { FastifyInstance } from 'fastify';
import { createHttpServer } from './http/http-server.ts';
import { createServices, type ServiceDeps, type Services } from './services.ts';

export type AppDeps = ServiceDeps;

export interface App extends Services {
  server: FastifyInstance;
}

/**
 * The service: its services (no HTTP) and the HTTP server over them. Tasks a previous process
 * left unfinished are recovered by `recover()`, which the process calls once it listens (so a
 * start that fails, e.g. on a port in use, touches no task).
 */
export async function createApp(deps: AppDeps): Promise<App> {
  const services = createServices(deps);
  return { ...services, server: await createHttpServer(services) };
}
