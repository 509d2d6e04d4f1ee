import { createRequire } from 'node:module';
import type { Span, Context } from '@opentelemetry/api';
import type { TokenUsage } from '../shapes/usage.ts';
import type { TaskRow } from '../store/schema.ts';

/** The spans of one task run: the task, a child per model call and per tool call. */
export interface TaskTrace {
  modelCallStarted(model: string): void;
  modelCallEnded(model: string, usage: TokenUsage | null): void;
  toolStarted(toolCallId: string, name: string): void;
  toolEnded(toolCallId: string, error: string | null): void;
  /** Ends the task span with the task as it is now (ended, paused or left running). */
  end(row: TaskRow, error: string | null): void;
}

export interface Tracing {
  readonly enabled: boolean;
  startTask(row: TaskRow, model: string | null): TaskTrace;
  shutdown(): Promise<void>;
}

const noTrace: TaskTrace = { modelCallStarted() {}, modelCallEnded() {}, toolStarted() {}, toolEnded() {}, end() {} };

/** A W3C traceparent: version-traceid-parentid-flags. */
export const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * OpenTelemetry traces, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) is set: a span
 * `invoke_agent <subagent_type>` per task run with the GenAI semantic conventions, a child `chat
 * <model>` per model call and `execute_tool <name>` per tool call, exported over OTLP/HTTP by the
 * official SDK (which reads the standard OTEL_* variables). The caller's `traceparent` makes the
 * task span its child. Unset, the SDK is not even loaded: every call below is a no-op.
 */
export function createTracing(env: NodeJS.ProcessEnv = process.env): Tracing {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
    return { enabled: false, startTask: () => noTrace, shutdown: async () => {} };
  }
  // Loaded only here, synchronously (the services are built synchronously), never when tracing is off.
  const require = createRequire(import.meta.url);
  const api = require('@opentelemetry/api') as typeof import('@opentelemetry/api');
  const { BasicTracerProvider, BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');

  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME ?? 'subagentd' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  const tracer = provider.getTracer('subagentd');
  const propagator = new W3CTraceContextPropagator();
  const usageAttributes = (u: TokenUsage) => ({
    'gen_ai.usage.input_tokens': u.inputTokens,
    'gen_ai.usage.output_tokens': u.outputTokens,
  });

  return {
    enabled: true,
    startTask(row, model) {
      const parent: Context = row.traceParent
        ? propagator.extract(api.ROOT_CONTEXT, { traceparent: row.traceParent }, api.defaultTextMapGetter)
        : api.ROOT_CONTEXT;
      const task = tracer.startSpan(
        `invoke_agent ${row.subagentType}`,
        {
          kind: api.SpanKind.INTERNAL,
          attributes: {
            'gen_ai.operation.name': 'invoke_agent',
            'gen_ai.agent.name': row.subagentType,
            'gen_ai.agent.id': row.id,
            'gen_ai.conversation.id': row.parentTaskId,
            ...(model && { 'gen_ai.request.model': model }),
            'subagentd.task.id': row.id,
            'subagentd.user.id': row.userId,
          },
        },
        parent,
      );
      const inTask = api.trace.setSpan(api.ROOT_CONTEXT, task);
      let call: Span | null = null;
      const tools = new Map<string, Span>();
      return {
        modelCallStarted(m) {
          call?.end();
          call = tracer.startSpan(
            `chat ${m}`,
            { kind: api.SpanKind.CLIENT, attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': m } },
            inTask,
          );
        },
        modelCallEnded(_m, usage) {
          if (!call) return;
          if (usage) call.setAttributes(usageAttributes(usage));
          call.end();
          call = null;
        },
        toolStarted(id, name) {
          tools.set(
            id,
            tracer.startSpan(
              `execute_tool ${name}`,
              { kind: api.SpanKind.INTERNAL, attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'gen_ai.tool.call.id': id } },
              inTask,
            ),
          );
        },
        toolEnded(id, error) {
          const span = tools.get(id);
          tools.delete(id);
          if (!span) return;
          if (error) span.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
          span.end();
        },
        end(row, error) {
          call?.end();
          for (const span of tools.values()) span.end();
          task.setAttributes({ ...usageAttributes(row), 'subagentd.task.status': row.status, 'subagentd.task.steps': row.steps });
          if (error) {
            task.setStatus({ code: api.SpanStatusCode.ERROR, message: error });
            task.setAttribute('error.type', row.errorCode ?? 'error');
          }
          task.end();
        },
      };
    },
    shutdown: () => provider.shutdown(),
  };
}
