/**
 * `npm run model`: the project's scripted model server alone (Chat Completions and Responses,
 * Anthropic Messages, Gemini; streamed), with the demo's scripts and a parent's (an orchestrator's model that
 * delegates through `task`), so the README's walk-through and its ai-SDK orchestrator run offline
 * against a service started separately. MODEL_PORT chooses its port (default 8788).
 */
import { scriptDemo } from '../scripted-model/demo-script';
import { startScriptedModel } from '../scripted-model/server';

const model = await startScriptedModel({ port: Number(process.env.MODEL_PORT ?? 8788) });
scriptDemo(model);
console.log(`scripted model listening at ${model.url}`);
console.log(`start the service against it:  OPENAI_BASE_URL=${model.url} OPENAI_API_KEY=scripted npm run dev`);
console.log(
  `Claude and Gemini too (model ids anthropic:<model>, google:<model>):  ANTHROPIC_BASE_URL=${model.url} ANTHROPIC_API_KEY=scripted GOOGLE_BASE_URL=${model.url} GOOGLE_GENERATIVE_AI_API_KEY=scripted`,
);
const stop = () => void model.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
