/**
 * The Agent Cards of the test A2A agents (a2a-agents.ts), as each dialect spells them: a pure v0.3 card, and the
 * interop options a card may declare — input modes (card-wide and per skill) and security schemes/requirements
 * (declared only, never enforced: the agent is a lab for what our registration and send paths read).
 */

/** Security a card declares: named schemes of a few kinds, and the alternatives that satisfy it. */
export interface LabSecurity {
  schemes: Record<string, "bearer" | "apiKey" | "oauth2" | "mtls">;
  /** Alternatives, each naming the schemes it needs. */
  require: string[][];
}

/** What a test agent's card declares beyond skills and push (see StartA2AAgentOptions). */
export interface CardInteropOptions {
  /** The card's `defaultInputModes`. Default `["application/json", "text/plain"]`. */
  inputModes?: string[];
  /** Per-skill `inputModes`, by skill id. */
  skillInputModes?: Record<string, string[]>;
  /** Security schemes and requirements the card declares (in the card's own dialect's shape); not enforced. */
  security?: LabSecurity;
}

/** A v0.3 Agent Card as the v0.3 specification shapes it (card-level protocolVersion, url, preferredTransport). */
export function v03Card(card: { name: string; description: string; url: string; push: boolean; skills: string[] }): Record<string, unknown> {
  return {
    protocolVersion: "0.3.0",
    name: card.name,
    description: card.description,
    url: card.url,
    preferredTransport: "JSONRPC",
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: card.push },
    defaultInputModes: ["application/json", "text/plain"],
    defaultOutputModes: ["application/json"],
    skills: card.skills.map((id) => ({ id, name: id, description: `skill ${id}`, tags: ["test"] })),
  };
}

const V1_SCHEMES = {
  bearer: { httpAuthSecurityScheme: { scheme: "Bearer" } },
  apiKey: { apiKeySecurityScheme: { location: "header", name: "X-API-Key" } },
  oauth2: { oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: "https://auth.example.com/token", scopes: {} } } } },
  mtls: { mtlsSecurityScheme: {} },
} as const;
const V03_SCHEMES = {
  bearer: { type: "http", scheme: "bearer" },
  apiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
  oauth2: { type: "oauth2", flows: { clientCredentials: { tokenUrl: "https://auth.example.com/token", scopes: {} } } },
  mtls: { type: "mutualTLS" },
} as const;

export function v1Security(security: LabSecurity | undefined): Record<string, unknown> {
  if (!security) return {};
  return {
    securitySchemes: Object.fromEntries(Object.entries(security.schemes).map(([name, kind]) => [name, V1_SCHEMES[kind]])),
    securityRequirements: security.require.map((alt) => ({ schemes: Object.fromEntries(alt.map((name) => [name, { list: [] }])) })),
  };
}

/** The interop options as a pure v0.3 card spells them. */
export function v03Interop(options: CardInteropOptions): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (options.inputModes) out.defaultInputModes = options.inputModes;
  if (options.security) {
    out.securitySchemes = Object.fromEntries(Object.entries(options.security.schemes).map(([name, kind]) => [name, V03_SCHEMES[kind]]));
    out.security = options.security.require.map((alt) => Object.fromEntries(alt.map((name) => [name, []])));
  }
  return out;
}
