/**
 * The HTTP side of signed approval links, as a plain Node handler the gateway mounts:
 *
 * - `GET /approvals/decide?token=…` verifies the link and shows a tiny confirmation page with a POST button. It
 *   never decides: mail scanners and link previews fetch GET links on their own.
 * - `POST /approvals/decide` (form field `token`, or `?token=`) decides: 200 with the outcome (the first outcome
 *   when the approval was decided already), 400 for a malformed token, 401 for a forged, expired or retired one,
 *   404 for an unknown approval. Messages never name another tenant or its data.
 *
 * `handleApprovalLink` answers false, touching nothing, for any other path.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { isSwitchyardError, ErrorCode } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { readBody } from "../read-body.js";
import { APPROVAL_LINK_PATH, linkRefusalOf, redeemApprovalLink, verifyLinkToken, type RedeemLinkDeps } from "./link-signing.js";

export interface ApprovalLinkRouteDeps extends RedeemLinkDeps {
  logger?: Logger;
  /** Largest POST body read. @defaultValue 8 KiB */
  maxBodyBytes?: number;
}

const SECURITY_HEADERS = {
  "cache-control": "no-store",
  // The token is in the URL: never hand it to another site.
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
};

export async function handleApprovalLink(req: IncomingMessage, res: ServerResponse, deps: ApprovalLinkRouteDeps): Promise<boolean> {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (url.pathname !== APPROVAL_LINK_PATH) return false;
  const logger = deps.logger ?? silentLogger;
  try {
    if (req.method === "GET" || req.method === "HEAD") await confirm(res, deps, url.searchParams.get("token"));
    else if (req.method === "POST") await decide(req, res, deps, url.searchParams.get("token"));
    else send(res, 405, "text/plain", "use GET to see an approval link, POST to decide it\n", { allow: "GET, HEAD, POST" });
  } catch (error) {
    const refusal = linkRefusalOf(error);
    if (refusal) send(res, refusal === "malformed" ? 400 : 401, "text/plain", `${(error as Error).message}\n`);
    else if (isSwitchyardError(error, ErrorCode.NotFound)) send(res, 404, "text/plain", "no such approval\n");
    else {
      logger.error({ err: error }, "approval link failed");
      send(res, 500, "text/plain", "the decision could not be recorded; try again\n");
    }
  }
  return true;
}

async function confirm(res: ServerResponse, deps: ApprovalLinkRouteDeps, token: string | null): Promise<void> {
  if (!token) return send(res, 400, "text/plain", "the approval link has no token\n");
  const claims = await verifyLinkToken(deps.stores.linkKeys, deps.pool, token, (deps.clock ?? Date.now)());
  const approval = await deps.stores.approvals.get(deps.pool, claims.orgId, claims.approvalId);
  if (!approval) return send(res, 404, "text/plain", "no such approval\n");
  const verb = claims.decision === "approve" ? "Approve" : "Deny";
  const facts = `<dl>
<dt>step</dt><dd>${escapeHtml(approval.stepId)} of task ${escapeHtml(approval.taskId)}</dd>
<dt>action</dt><dd>${escapeHtml(approval.action)} to ${escapeHtml(approval.destination)}</dd>
<dt>why it needs approval</dt><dd>${escapeHtml(approval.reason)} (${escapeHtml(approval.rule)})</dd>
<dt>cost</dt><dd>${approval.cost}</dd>
</dl>`;
  if (approval.status !== "pending") {
    return send(res, 200, "text/html", page(`Already ${approval.status}`, `<p>This approval was already ${approval.status} by ${escapeHtml(approval.decidedBy ?? "unknown")}.</p>${facts}`));
  }
  // No action attribute: the form posts back to this very URL, wherever the gateway is mounted.
  const form = `<form method="post"><input type="hidden" name="token" value="${escapeHtml(token)}"><button type="submit">${verb}</button></form>`;
  send(res, 200, "text/html", page(`${verb} this step?`, `${facts}${form}<p>This link works once and until ${escapeHtml(new Date(claims.expiresAtMs).toISOString())}.</p>`));
}

async function decide(req: IncomingMessage, res: ServerResponse, deps: ApprovalLinkRouteDeps, queryToken: string | null): Promise<void> {
  const body = await readBody(req, deps.maxBodyBytes ?? 8 * 1024);
  if (body === undefined) return send(res, 413, "text/plain", "request body too large\n", { connection: "close" });
  const isForm = (req.headers["content-type"] ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded");
  const token = (isForm ? new URLSearchParams(body).get("token") : null) || queryToken;
  if (!token) return send(res, 400, "text/plain", "the request has no token (form field or query parameter `token`)\n");
  const outcome = await redeemApprovalLink(deps, token);
  const text = outcome.alreadyDecided
    ? `Already ${outcome.status} by ${outcome.decidedBy}; this link changed nothing.`
    : outcome.status === "approved"
      ? "Approved. The step continues."
      : "Denied. The step fails closed.";
  send(res, 200, "text/plain", `${text}\n`);
}

/** The body as text, or undefined when it is over the limit (the rest is drained, not buffered). */
function send(res: ServerResponse, status: number, type: "text/plain" | "text/html", body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, ...headers, "content-type": `${type}; charset=utf-8`, "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function page(title: string, content: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)} · Switchyard</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}dt{font-weight:600}button{font-size:1.1rem;padding:.5rem 1.5rem}</style>
</head><body><h1>${escapeHtml(title)}</h1>${content}</body></html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}
