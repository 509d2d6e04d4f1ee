/**
 * The import graph's rules (npm run lint:graph, run by npm test): no circle, and the layers below,
 * each importing only from its own layer or lower ones. A request reads top to bottom: the
 * process, the HTTP layer, the services, the task lifecycle, the agent loop and the tools, the
 * events, money and metrics, the store, the shapes.
 */
const LAYERS = [
  ['shapes', '^src/(shapes|errors|logging|util)/|^src/version\\.ts$'],
  ['store', '^src/store/'],
  ['events, money, metrics, telemetry', '^src/(events|money|metrics|telemetry)/'],
  ['network', '^src/network/'],
  ['config, webhooks', '^src/(config|webhooks)/'],
  ['workspace, sandbox', '^src/(workspace|sandbox)/'],
  ['tools', '^src/tools/'],
  ['definitions, hooks', '^src/(definitions|hooks)/'],
  ['loop, acp, mcp', '^src/(loop|acp|mcp)/'],
  ['tasks: writes', '^src/tasks/writes/'],
  ['tasks: the run path', '^src/tasks/run/'],
  ['tasks: systems', '^src/tasks/systems/'],
  ['tasks: the service', '^src/tasks/[^/]+\\.ts$'],
  ['a2a', '^src/a2a/'],
  ['services', '^src/(services|startup-warnings)\\.ts$'],
  ['http', '^src/http/'],
  ['app', '^src/app\\.ts$'],
  ['server', '^src/server\\.ts$'],
];

const layerRules = LAYERS.slice(0, -1).map(([name, path], i) => ({
  name: `layer: ${name}`,
  comment: `${name} imports only from its own layer or lower ones`,
  severity: 'error',
  from: { path },
  to: {
    path: LAYERS.slice(i + 1)
      .map(([, p]) => p)
      .join('|'),
  },
}));

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'an import circle', from: {}, to: { circular: true } },
    ...layerRules,
    {
      name: 'layer: every file in one',
      comment: 'a file of src/ outside every layer would escape the rules above: name its folder in LAYERS',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS.map(([, p]) => p).join('|') },
      to: {},
    },
    {
      name: 'layer: every import in one',
      comment: 'an import of a file of src/ outside every layer: name its folder in LAYERS',
      severity: 'error',
      from: {},
      to: { path: '^src/', pathNot: LAYERS.map(([, p]) => p).join('|') },
    },
    {
      name: 'client: nothing of the server',
      comment: '@subagentd/client installs without the server: its types come from the OpenAPI document',
      severity: 'error',
      from: { path: '^packages/client/' },
      to: { path: '^src/' },
    },
    { name: 'server: not the client', severity: 'error', from: { path: '^src/' }, to: { path: '^packages/' } },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js', '.mjs'] },
  },
};
