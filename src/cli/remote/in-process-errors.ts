/**
 * Errors across the CLI's in-process transport, unserialised: what a handler throws reaches the command as that
 * very error, as when direct mode called the task service itself. Over the wire a SwitchyardError would come back
 * rebuilt from its ErrorDetail, and anything else as INTERNAL with its message withheld (the gateway's rule for
 * remote callers); in-process the CLI's own error reporting (output.ts `toCliError`) sees the original, so a
 * Postgres error code still becomes "run `switchyard migrate` first" and the like.
 *
 * The router's outermost interceptor records what a call threw under the call's id (a header: the in-memory
 * transport still encodes each request), and the transport wrapper puts it back in place of the decoded
 * ConnectError. Not a client interceptor: the client side turns whatever its interceptors throw into a
 * ConnectError. An entry lives as long as its call.
 */
import type { Interceptor, Transport } from "@connectrpc/connect";
import { watchCall } from "../../gateway/call-outcome.js";

const CALL_HEADER = "switchyard-in-process-call";

export function inProcessErrors(): { server: Interceptor; wrap(transport: Transport): Transport } {
  const thrown = new Map<string, unknown>();
  let calls = 0;

  const server: Interceptor = (next) => (req) => {
    const id = req.header.get(CALL_HEADER) ?? "";
    return watchCall(next, req, { failed: (error) => (thrown.set(id, error), error) });
  };

  /** A new call: its id in the headers, and how to swap what it failed with for what the handler threw. */
  const begin = (header: Parameters<Transport["unary"]>[3]) => {
    const id = String(++calls);
    const headers = new Headers(header);
    headers.set(CALL_HEADER, id);
    const original = (error: unknown): unknown => thrown.get(id) ?? error;
    return { headers, original, end: () => thrown.delete(id) };
  };

  const wrap = (transport: Transport): Transport => ({
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const call = begin(header);
      try {
        return await transport.unary(method, signal, timeoutMs, call.headers, input, contextValues);
      } catch (error) {
        throw call.original(error);
      } finally {
        call.end();
      }
    },
    async stream(method, signal, timeoutMs, header, input, contextValues) {
      const call = begin(header);
      let res;
      try {
        res = await transport.stream(method, signal, timeoutMs, call.headers, input, contextValues);
      } catch (error) {
        const original = call.original(error);
        call.end();
        throw original;
      }
      const messages = res.message;
      return {
        ...res,
        message: (async function* () {
          try {
            yield* messages;
          } catch (error) {
            throw call.original(error);
          } finally {
            call.end();
          }
        })(),
      };
    },
  });

  return { server, wrap };
}
