/**
 * The ingest endpoints port (issue 27 §2): `ingest_endpoints`, a tenant's webhook receivers, whose id is the URL
 * token. Secrets reach it sealed (vault envelopes) and leave it sealed; listings carry only fingerprints. The
 * endpoint functions (ingest/endpoint-store.ts) and the delivery route's cache take it; the adapter is
 * postgres-endpoint-store.ts.
 */
import type { IngestSource } from "../../ingest/sources.js";
import type { Queryable } from "../db.js";

/** What listings show: never a secret, only its fingerprint. */
export interface IngestEndpoint {
  id: string;
  orgId: string;
  source: IngestSource;
  workflow: string;
  enabled: boolean;
  /** `fp_…` of the current secret; null for generic. */
  secretFingerprint: string | null;
  /** While a rotated-out secret still verifies. */
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What the delivery route needs of an endpoint, found by its URL token alone (the token names the tenant). */
export interface IngestEndpointSecrets {
  id: string;
  orgId: string;
  source: IngestSource;
  workflow: string;
  enabled: boolean;
  secretCiphertext: string | null;
  previousSecretCiphertext: string | null;
  previousSecretExpiresAt: Date | null;
}

export interface NewIngestEndpoint {
  id: string;
  orgId: string;
  source: IngestSource;
  workflow: string;
  secretCiphertext: string | null;
  secretFingerprint: string | null;
}

export interface IngestEndpointStore {
  insert(db: Queryable, endpoint: NewIngestEndpoint): Promise<IngestEndpoint>;
  list(db: Queryable, orgId: string): Promise<IngestEndpoint[]>;
  get(db: Queryable, orgId: string, id: string): Promise<IngestEndpoint | undefined>;
  /** In one statement the current ciphertext becomes the previous one (valid `graceMs` more) as it is replaced. */
  rotateSecret(db: Queryable, orgId: string, id: string, secret: { ciphertext: string; fingerprint: string; graceMs: number }): Promise<IngestEndpoint | undefined>;
  disable(db: Queryable, orgId: string, id: string): Promise<IngestEndpoint | undefined>;
  /** The endpoint a delivery names, whatever its tenant. */
  findForDelivery(db: Queryable, id: string): Promise<IngestEndpointSecrets | undefined>;
}
