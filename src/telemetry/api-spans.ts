/**
 * The gateway's span: `switchyard.api <Service>/<Method>`, one per Connect call (server streams: until the stream
 * ends), a child of the caller's `traceparent` header when it sent one. Its attributes are the RPC's service and
 * method, the tenant the API key resolved to and the Connect status code. Handlers run inside it, so a task started
 * by the call opens its trace under it (task-spans.ts). With tracing off the interceptor is a plain pass-through.
 */
import { Code, ConnectError, type ContextValues, type Interceptor } from "@connectrpc/connect";
import { context, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { parentContext } from "./traceparent.js";
import { tracer, tracingOn } from "./tracing.js";

export interface TracingInterceptorOptions {
  /** The tenant the auth interceptor resolved for the call (read after it ran), if any. */
  tenantOf?: (values: ContextValues) => string | undefined;
}

/** The Connect code as the semantic conventions spell it (`not_found`, `invalid_argument`). */
function codeOf(error: unknown): string {
  const code = error instanceof ConnectError ? error.code : Code.Unknown;
  return (Code[code] ?? "Unknown").replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

export function createTracingInterceptor(options: TracingInterceptorOptions = {}): Interceptor {
  return (next) => async (req) => {
    if (!tracingOn()) return next(req);
    const span = tracer().startSpan(
      `switchyard.api ${req.service.typeName}/${req.method.name}`,
      { kind: SpanKind.SERVER, attributes: { "rpc.system": "connect_rpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name } },
      parentContext(req.header.get("traceparent")),
    );
    const finish = (error?: unknown) => {
      const tenant = options.tenantOf?.(req.contextValues);
      if (tenant) span.setAttribute("switchyard.tenant", tenant);
      span.setAttribute("rpc.connect_rpc.status_code", error === undefined ? "ok" : codeOf(error));
      if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      span.end();
    };
    let res;
    try {
      res = await context.with(trace.setSpan(context.active(), span), () => next(req));
    } catch (error) {
      finish(error);
      throw error;
    }
    if (!res.stream) {
      finish();
      return res;
    }
    return { ...res, message: traced(span, res.message, finish) };
  };
}

async function* traced<T>(_span: Span, messages: AsyncIterable<T>, finish: (error?: unknown) => void): AsyncIterable<T> {
  try {
    yield* messages;
    finish();
  } catch (error) {
    finish(error);
    throw error;
  }
}
