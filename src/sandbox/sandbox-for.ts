import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../config/config.ts';
import { createContainerSandbox, type EngineAddress } from './container-sandbox.ts';
import { createSandbox, type Sandbox } from './sandbox.ts';

/**
 * The sandbox the configuration asks for. SANDBOX=bwrap (the default): bubblewrap as
 * BASH_SANDBOX says, hiding the service's own folders (its working folder, the database's folder,
 * every workspace, the definitions) from commands; says at start what commands will and will not
 * be confined by; throws when BASH_SANDBOX=bwrap cannot be had. SANDBOX=container: a container per
 * task run at DOCKER_HOST (the engine is reached, and what a killed instance left removed, by
 * `prepare` at start).
 */
export function sandboxFor(config: Config, logger: Logger): Sandbox {
  if (config.sandbox === 'container') {
    logger.info({ dockerHost: config.docker.host, image: config.sandboxImage }, 'SANDBOX=container: commands run in a container per task run');
    return createContainerSandbox({
      engine: engineAddress(config.docker),
      image: config.sandboxImage!,
      instanceId: config.instanceId,
      maxProcesses: config.sandboxMaxProcesses,
      maxFileBytes: config.sandboxMaxFileBytes,
      maxMemoryBytes: config.sandboxMaxMemoryBytes,
      tmpBytes: config.sandboxTmpBytes,
      cpus: config.sandboxCpus,
      engineTimeoutMs: config.sandboxEngineTimeoutMs,
      logger,
    });
  }
  const sandbox = createSandbox({
    mode: config.bashSandbox,
    hide: [process.cwd(), path.dirname(path.resolve(config.databasePath)), config.workspacesDir, config.agentsDir, config.skillsDir],
    maxProcesses: config.sandboxMaxProcesses,
    maxFileBytes: config.sandboxMaxFileBytes,
    maxMemoryBytes: config.sandboxMaxMemoryBytes,
    tmpBytes: config.sandboxTmpBytes,
  });
  if (sandbox.kind === 'unavailable' && config.bashSandbox === 'bwrap') {
    throw new Error(`BASH_SANDBOX=bwrap but ${sandbox.reason}`);
  }
  if (sandbox.kind === 'unavailable') logger.error({ reason: sandbox.reason }, 'bash and shell tasks are refused');
  if (sandbox.kind === 'none') logger.warn('BASH_SANDBOX=none: commands run without a sandbox, confined only by their working folder');
  if (sandbox.limiter?.reason) {
    logger.warn(
      { reason: sandbox.limiter.reason, pids: sandbox.limiter.pids, memory: sandbox.limiter.memory },
      'commands are capped by ulimit where a cgroup is missing: -u does not bind root, -v counts address space',
    );
  }
  return sandbox;
}

/** DOCKER_HOST as the client dials it; with DOCKER_TLS_VERIFY=1 the TLS files of DOCKER_CERT_PATH, read now (a missing one stops the start). */
function engineAddress(docker: Config['docker']): EngineAddress {
  if (docker.host.startsWith('unix://')) return { socketPath: docker.host.slice('unix://'.length) };
  const url = new URL(docker.host.replace(/^tcp:/, 'http:'));
  let tls: { ca: Buffer; cert: Buffer; key: Buffer } | null = null;
  if (docker.tlsVerify) {
    const read = (name: string) => {
      try {
        return readFileSync(path.join(docker.certPath!, name));
      } catch (err) {
        throw new ConfigError(`invalid configuration:\n  DOCKER_CERT_PATH: cannot read ${name} (${(err as Error).message})`);
      }
    };
    tls = { ca: read('ca.pem'), cert: read('cert.pem'), key: read('key.pem') };
  }
  return { host: url.hostname, port: Number(url.port), tls };
}
