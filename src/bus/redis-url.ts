/**
 * What `REDIS_URL` names: one Redis (`redis://`, `rediss://`) or a Redis Cluster
 * (`redis+cluster://[user:password@]host:port,host:port[,…]`, or `rediss+cluster://` for TLS). A cluster URL lists
 * seed nodes only: the client asks any of them for the slot map and finds the rest itself, so two or three seeds are
 * enough. A cluster has no database number (Redis Cluster serves only db 0), so a path is refused.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

export const CLUSTER_SCHEMES = ["redis+cluster:", "rediss+cluster:"] as const;
export const SINGLE_SCHEMES = ["redis:", "rediss:"] as const;

export interface RedisNode {
  host: string;
  port: number;
}

export type RedisTarget =
  | { kind: "single"; url: string }
  | { kind: "cluster"; nodes: RedisNode[]; username?: string; password?: string; tls: boolean };

const DEFAULT_PORT = 6379;

/** Parses `url`; errors name `variable` (the environment variable it came from). */
export function parseRedisUrl(url: string, variable = "REDIS_URL"): RedisTarget {
  const scheme = /^([a-z+]+:)\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme && (SINGLE_SCHEMES as readonly string[]).includes(scheme)) {
    try {
      new URL(url);
    } catch {
      throw invalid(variable, url, "is not a URL");
    }
    return { kind: "single", url };
  }
  if (!scheme || !(CLUSTER_SCHEMES as readonly string[]).includes(scheme)) {
    throw invalid(variable, url, `must use ${[...SINGLE_SCHEMES, ...CLUSTER_SCHEMES].join(", ")} (got ${scheme ?? "no scheme"})`);
  }
  let rest = url.slice(scheme.length + 2);
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf("@");
  if (at >= 0) {
    const credentials = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = credentials.indexOf(":");
    username = decodeURIComponent(colon >= 0 ? credentials.slice(0, colon) : credentials) || undefined;
    password = colon >= 0 ? decodeURIComponent(credentials.slice(colon + 1)) : undefined;
  }
  const query = rest.search(/[/?#]/);
  if (query >= 0 && rest.slice(query) !== "/") throw invalid(variable, url, "takes no path or query for a cluster (Redis Cluster has only database 0)");
  if (query >= 0) rest = rest.slice(0, query);
  const nodes = rest.split(",").map((item) => parseNode(item.trim(), variable, url));
  if (nodes.length === 0) throw invalid(variable, url, "names no cluster node");
  const target: RedisTarget = { kind: "cluster", nodes, tls: scheme === "rediss+cluster:" };
  if (username !== undefined) target.username = username;
  if (password !== undefined) target.password = password;
  return target;
}

/** The URL with its password replaced, for logs and error messages. */
export function redactRedisUrl(url: string): string {
  return url.replace(/(\/\/[^:@/]*:)[^@/]*@/, "$1***@");
}

function parseNode(item: string, variable: string, url: string): RedisNode {
  // `[::1]:7000`, `host:7000`, or `host` (default port).
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9_.-]+))(?::(\d{1,5}))?$/.exec(item);
  const port = match?.[3] === undefined ? DEFAULT_PORT : Number(match[3]);
  if (!match || port < 1 || port > 65_535) throw invalid(variable, url, `has a node ${JSON.stringify(item)} that is not host:port`);
  return { host: match[1] ?? match[2]!, port };
}

function invalid(variable: string, url: string, why: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.Config, `${variable} ${why}: ${JSON.stringify(redactRedisUrl(url))}`, { details: { variable } });
}
