/**
 * Everything under `/console`: the session route and the static files. Mounted by the gateway before the Connect
 * API; answers false for any other path.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { ExtraRoute } from "../options.js";
import { handleSessionRoute, SESSION_PATH, type SessionRouteDeps } from "./session-route.js";
import { CONSOLE_PREFIX, serveConsoleStatic, type StaticRouteOptions } from "./static-route.js";

export function createConsoleRoute(deps: SessionRouteDeps & StaticRouteOptions): ExtraRoute {
  return async (req: IncomingMessage, res: ServerResponse) => {
    const pathname = (req.url ?? "/").split("?")[0]!;
    if (pathname === SESSION_PATH) {
      await handleSessionRoute(req, res, deps);
      return true;
    }
    if (pathname !== CONSOLE_PREFIX && !pathname.startsWith(`${CONSOLE_PREFIX}/`)) return false;
    await serveConsoleStatic(req, res, deps);
    return true;
  };
}
