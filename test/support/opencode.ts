import { existsSync } from 'node:fs';

/** OPENCODE_BIN (`.ci/run` installs opencode-ai and sets it), or why the opencode tests are skipped. */
export const opencodeBin = process.env.OPENCODE_BIN;
export const opencodeMissing = !opencodeBin ? 'OPENCODE_BIN is not set' : !existsSync(opencodeBin) ? `OPENCODE_BIN=${opencodeBin} does not exist` : null;

/**
 * The environment that runs opencode offline against the scripted model at `modelUrl`: its config
 * (the model as an OpenAI-compatible provider, `extra` merged in) and no update, share, model list
 * or LSP download.
 */
export function opencodeEnv(modelUrl: string, extra: Record<string, unknown> = {}): Record<string, string> {
  return {
    OPENCODE_CONFIG_CONTENT: JSON.stringify({
      $schema: 'https://opencode.ai/config.json',
      provider: {
        scripted: {
          npm: '@ai-sdk/openai-compatible',
          name: 'Scripted',
          options: { baseURL: `${modelUrl}/v1`, apiKey: 'scripted' },
          models: { 'scripted-model': { name: 'Scripted model' } },
        },
      },
      model: 'scripted/scripted-model',
      autoupdate: false,
      share: 'disabled',
      ...extra,
    }),
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
  };
}
