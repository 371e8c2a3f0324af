/**
 * Ingest endpoints, stored through their port (store/ingest/endpoint-store.ts): a tenant's webhook receivers. The row's `id` is the URL token
 * (`POST /api/v1/ingest/{id}`, 144 random bits); for `generic` it is the only credential. Every other source has a
 * verification secret, generated here, shown ONCE (on create and on rotate) and stored only as a vault envelope
 * sealed with AAD `ingest:<id>`; listings show its fingerprint.
 *
 * A rotation keeps the previous secret valid for ROTATION_GRACE_MS, so deliveries signed before the provider's
 * settings were updated still verify.
 */
import { randomBytes } from "node:crypto";
import { ErrorCode, SwitchyardError } from "../errors.js";
import type { Queryable } from "../store/db.js";
import type { IngestEndpoint, IngestEndpointSecrets, IngestEndpointStore } from "../store/ingest/endpoint-store.js";
import { getWorkflow } from "../store/workflow-store.js";
import { requireCipher, type SecretCipher } from "../vault/secret-cipher.js";
import { INGEST_SOURCES, type IngestSource } from "./sources.js";

export { INGEST_SOURCES, ingestUrl, type IngestSource } from "./sources.js";

/** How long a rotated-out secret still verifies. */
export const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000;

/** 18 random bytes in base64url: 24 characters, 144 bits. Lookups refuse anything not shaped like one. */
export const ENDPOINT_ID_PATTERN = /^[A-Za-z0-9_-]{22,64}$/;

export type { IngestEndpoint, IngestEndpointSecrets } from "../store/ingest/endpoint-store.js";

/** Create and rotate answer the secret once, beside the endpoint. */
export interface IngestEndpointWithSecret {
  endpoint: IngestEndpoint;
  /** The verification secret in clear: shown once, never stored or returned again. Null for generic. */
  secret: string | null;
}

export interface CreateIngestEndpointInput {
  source: string;
  workflow: string;
}

export function sealAad(endpointId: string): string {
  return `ingest:${endpointId}`;
}

export function parseSource(value: string, path = "source"): IngestSource {
  if ((INGEST_SOURCES as readonly string[]).includes(value)) return value as IngestSource;
  throw new SwitchyardError(ErrorCode.InvalidArgument, `${path}: ${JSON.stringify(value)} is not one of ${INGEST_SOURCES.join(", ")}`, { details: { path } });
}

/**
 * A fresh verification secret in the form the provider's settings take: Standard Webhooks (Cairn) secrets are
 * `whsec_<base64>`; GitHub, Gitea and Slack take any string, so 32 random bytes in hex.
 */
export function newVerificationSecret(source: Exclude<IngestSource, "generic">): string {
  const bytes = randomBytes(32);
  return source === "cairn" ? `whsec_${bytes.toString("base64")}` : bytes.toString("hex");
}

export async function createIngestEndpoint(store: IngestEndpointStore, db: Queryable, cipher: SecretCipher | undefined, orgId: string, input: CreateIngestEndpointInput): Promise<IngestEndpointWithSecret> {
  const source = parseSource(input.source);
  const workflow = input.workflow.trim();
  if (workflow === "") throw new SwitchyardError(ErrorCode.InvalidArgument, "workflow: name the workflow deliveries start (NAME or NAME@VERSION)", { details: { path: "workflow" } });
  // Refused before anything is written: a verified source with no key to seal its secret.
  const sealer = source === "generic" ? undefined : requireCipher(cipher, `creating a ${source} ingest endpoint`);
  // The workflow must exist now; `name` alone follows its latest version at each delivery.
  await getWorkflow(db, orgId, workflow);
  const id = randomBytes(18).toString("base64url");
  const secret = source === "generic" ? null : newVerificationSecret(source);
  const endpoint = await store.insert(db, {
    id,
    orgId,
    source,
    workflow,
    secretCiphertext: secret && sealer ? sealer.seal(secret, sealAad(id)) : null,
    secretFingerprint: secret && sealer ? sealer.fingerprint(secret) : null,
  });
  return { endpoint, secret };
}

export async function listIngestEndpoints(store: IngestEndpointStore, db: Queryable, orgId: string): Promise<IngestEndpoint[]> {
  return store.list(db, orgId);
}

export async function getIngestEndpoint(store: IngestEndpointStore, db: Queryable, orgId: string, id: string): Promise<IngestEndpoint> {
  const endpoint = await store.get(db, orgId, id);
  if (!endpoint) throw notFound(orgId, id);
  return endpoint;
}

/**
 * A new secret, shown once; the current one becomes the previous and verifies until `now + ROTATION_GRACE_MS`.
 * Refused on generic: its URL is its credential (create a new endpoint and disable the old one instead).
 */
export async function rotateIngestSecret(store: IngestEndpointStore, db: Queryable, cipher: SecretCipher | undefined, orgId: string, id: string): Promise<IngestEndpointWithSecret> {
  const current = await getIngestEndpoint(store, db, orgId, id);
  if (current.source === "generic") {
    throw new SwitchyardError(
      ErrorCode.FailedPrecondition,
      `ingest endpoint ${id} is generic: it has no secret to rotate, its URL is its credential; create a new endpoint and disable this one to change it`,
      { details: { reason: "GENERIC_HAS_NO_SECRET" } },
    );
  }
  const sealer = requireCipher(cipher, `rotating the secret of ingest endpoint ${id}`);
  const secret = newVerificationSecret(current.source);
  // One statement: the row's current ciphertext moves to `previous` as it is replaced, whatever ran in between.
  const endpoint = await store.rotateSecret(db, orgId, id, { ciphertext: sealer.seal(secret, sealAad(id)), fingerprint: sealer.fingerprint(secret), graceMs: ROTATION_GRACE_MS });
  if (!endpoint) throw notFound(orgId, id);
  return { endpoint, secret };
}

/** Deliveries to a disabled endpoint answer 404, as to one that never existed. */
export async function disableIngestEndpoint(store: IngestEndpointStore, db: Queryable, orgId: string, id: string): Promise<IngestEndpoint> {
  const endpoint = await store.disable(db, orgId, id);
  if (!endpoint) throw notFound(orgId, id);
  return endpoint;
}

/**
 * The endpoint a delivery names, whatever its tenant (the route runs before any tenant is known, like the A2A
 * callback route: the URL token decides the tenant). Undefined for an unknown id.
 */
export async function findEndpointForDelivery(store: IngestEndpointStore, db: Queryable, id: string): Promise<IngestEndpointSecrets | undefined> {
  if (!ENDPOINT_ID_PATTERN.test(id)) return undefined;
  return store.findForDelivery(db, id);
}

function notFound(orgId: string, id: string): SwitchyardError {
  return new SwitchyardError(ErrorCode.NotFound, `no ingest endpoint ${id} for tenant ${orgId}`);
}
