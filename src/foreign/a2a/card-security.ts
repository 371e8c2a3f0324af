/**
 * An Agent Card's security requirements, read from either card shape, and whether a registration can meet them.
 *
 * Shapes read:
 * - v1.0 (proto JSON): `securitySchemes: { NAME: { apiKeySecurityScheme | httpAuthSecurityScheme |
 *   oauth2SecurityScheme | openIdConnectSecurityScheme | mtlsSecurityScheme: {…} } }` and
 *   `securityRequirements: [{ schemes: { NAME: { list: [scopes] } } }]`;
 * - v0.3 (OpenAPI style): `securitySchemes: { NAME: { type: "apiKey" | "http" | "oauth2" | "openIdConnect" |
 *   "mutualTLS", … } }` and `security: [{ NAME: [scopes] }]`;
 * - what `@a2a-js/sdk` 1.3 agents actually serve for v1.0: `{ NAME: { scheme: { $case: "httpAuthSecurityScheme",
 *   value: {…} } } }` (its card handler writes the in-memory oneof rather than the proto JSON form).
 * Both may sit on one (superset) card; requirement lists are united. As in OpenAPI, the requirement list is a set of
 * alternatives (any one will do) and each alternative needs all the schemes it names; an empty alternative `{}`
 * means anonymous access is allowed. Schemes declared but never required require nothing.
 *
 * What a registered `credential_ref` satisfies: we send it as `Authorization: Bearer <secret>` (secret-store.ts), so
 * it satisfies `http` (bearer; other http schemes are taken on trust — the operator chose the secret), `apiKey`
 * (the operator's secret is what the agent checks; a key expected in another header or the query is not moved
 * there — the send then fails with the agent's 401, loudly), and `oauth2` / `openIdConnect` (a token obtained out of
 * band is a bearer token; we run no OAuth flow). `mutualTLS` can never be met: we hold no client certificates.
 */
import { isJsonObject, type JsonObject } from "./untrusted-json.js";

export type SecuritySchemeType = "apiKey" | "http" | "oauth2" | "openIdConnect" | "mutualTLS" | "unknown";

export interface CardSecurity {
  /** Declared schemes by name. */
  schemes: Record<string, SecuritySchemeType>;
  /** Alternatives; each lists the scheme names it needs. Empty: the card requires nothing. */
  requirements: string[][];
}

const MAX_SCHEMES = 50;
const MAX_REQUIREMENTS = 50;

const V1_KINDS: Record<string, SecuritySchemeType> = {
  apiKeySecurityScheme: "apiKey",
  httpAuthSecurityScheme: "http",
  oauth2SecurityScheme: "oauth2",
  openIdConnectSecurityScheme: "openIdConnect",
  mtlsSecurityScheme: "mutualTLS",
};

const V03_KINDS: Record<string, SecuritySchemeType> = {
  apiKey: "apiKey",
  http: "http",
  oauth2: "oauth2",
  openIdConnect: "openIdConnect",
  mutualTLS: "mutualTLS",
};

/** Lenient on purpose: security is advisory metadata, so an odd entry is skipped rather than failing the card. */
export function readCardSecurity(card: JsonObject): CardSecurity {
  const schemes: Record<string, SecuritySchemeType> = {};
  if (isJsonObject(card.securitySchemes)) {
    for (const [name, scheme] of Object.entries(card.securitySchemes).slice(0, MAX_SCHEMES)) schemes[name] = schemeType(scheme);
  }
  const requirements: string[][] = [];
  if (Array.isArray(card.securityRequirements)) {
    for (const entry of card.securityRequirements.slice(0, MAX_REQUIREMENTS)) {
      if (isJsonObject(entry)) requirements.push(isJsonObject(entry.schemes) ? Object.keys(entry.schemes) : []);
    }
  }
  if (Array.isArray(card.security)) {
    for (const entry of card.security.slice(0, MAX_REQUIREMENTS)) {
      if (isJsonObject(entry)) requirements.push(Object.keys(entry));
    }
  }
  return { schemes, requirements };
}

function schemeType(scheme: unknown): SecuritySchemeType {
  if (!isJsonObject(scheme)) return "unknown";
  if (typeof scheme.type === "string") return V03_KINDS[scheme.type] ?? "unknown";
  // `@a2a-js/sdk` 1.3's card handler serves its in-memory oneof, `{ scheme: { $case, value } }`, not the proto JSON.
  if (isJsonObject(scheme.scheme) && typeof scheme.scheme.$case === "string") return V1_KINDS[scheme.scheme.$case] ?? "unknown";
  for (const key of Object.keys(scheme)) {
    const kind = V1_KINDS[key];
    if (kind) return kind;
  }
  return "unknown";
}

/** Whether one scheme is met by what a registration holds. */
function satisfiable(type: SecuritySchemeType | undefined, hasCredential: boolean): boolean {
  if (type === "mutualTLS" || type === "unknown" || type === undefined) return false;
  return hasCredential;
}

export interface SecurityVerdict {
  satisfied: boolean;
  /** The schemes of the requirement (as `NAME (type)`), for the refusal message. */
  required: string[];
  /** Why it cannot be met even with a credential (e.g. only mTLS is offered), when that is so. */
  unmeetable?: string;
}

/** Whether any alternative of the card's requirements can be met, given whether a credential is registered. */
export function checkCardSecurity(security: CardSecurity, hasCredential: boolean): SecurityVerdict {
  const { requirements, schemes } = security;
  if (requirements.length === 0 || requirements.some((alt) => alt.length === 0)) return { satisfied: true, required: [] };
  if (requirements.some((alt) => alt.every((name) => satisfiable(schemes[name], hasCredential)))) return { satisfied: true, required: [] };
  const named = [...new Set(requirements.flat())].map((name) => `${name} (${schemes[name] ?? "undeclared"})`);
  const meetable = requirements.some((alt) => alt.every((name) => satisfiable(schemes[name], true)));
  return meetable
    ? { satisfied: false, required: named }
    : { satisfied: false, required: named, unmeetable: "no alternative can be met with a bearer credential (mutual TLS and undeclared schemes are not supported)" };
}
