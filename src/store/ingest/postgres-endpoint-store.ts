/** The Postgres adapter of the ingest endpoints port (endpoint-store.ts). */
import type { IngestSource } from "../../ingest/sources.js";
import type { Queryable } from "../db.js";
import type { IngestEndpoint, IngestEndpointSecrets, IngestEndpointStore, NewIngestEndpoint } from "./endpoint-store.js";

const COLUMNS = `id, org_id, source, workflow, enabled, secret_fingerprint, previous_secret_expires_at, created_at, updated_at`;

interface Row {
  id: string;
  org_id: string;
  source: IngestSource;
  workflow: string;
  enabled: boolean;
  secret_fingerprint: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

function toEndpoint(row: Row): IngestEndpoint {
  return {
    id: row.id,
    orgId: row.org_id,
    source: row.source,
    workflow: row.workflow,
    enabled: row.enabled,
    secretFingerprint: row.secret_fingerprint,
    previousSecretExpiresAt: row.previous_secret_expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function insertIngestEndpoint(db: Queryable, endpoint: NewIngestEndpoint): Promise<IngestEndpoint> {
  const { rows } = await db.query<Row>(
    `INSERT INTO ingest_endpoints (id, org_id, source, workflow, secret_ciphertext, secret_fingerprint)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
    [endpoint.id, endpoint.orgId, endpoint.source, endpoint.workflow, endpoint.secretCiphertext, endpoint.secretFingerprint],
  );
  return toEndpoint(rows[0]!);
}

export async function listIngestEndpointRows(db: Queryable, orgId: string): Promise<IngestEndpoint[]> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM ingest_endpoints WHERE org_id = $1 ORDER BY created_at, id`, [orgId]);
  return rows.map(toEndpoint);
}

export async function getIngestEndpointRow(db: Queryable, orgId: string, id: string): Promise<IngestEndpoint | undefined> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM ingest_endpoints WHERE org_id = $1 AND id = $2`, [orgId, id]);
  return rows[0] ? toEndpoint(rows[0]) : undefined;
}

export async function rotateIngestEndpointSecret(db: Queryable, orgId: string, id: string, secret: { ciphertext: string; fingerprint: string; graceMs: number }): Promise<IngestEndpoint | undefined> {
  const { rows } = await db.query<Row>(
    `UPDATE ingest_endpoints
        SET previous_secret_ciphertext = secret_ciphertext,
            previous_secret_expires_at = now() + make_interval(secs => $5::double precision / 1000),
            secret_ciphertext = $3, secret_fingerprint = $4, updated_at = now()
      WHERE org_id = $1 AND id = $2
      RETURNING ${COLUMNS}`,
    [orgId, id, secret.ciphertext, secret.fingerprint, secret.graceMs],
  );
  return rows[0] ? toEndpoint(rows[0]) : undefined;
}

export async function disableIngestEndpointRow(db: Queryable, orgId: string, id: string): Promise<IngestEndpoint | undefined> {
  const { rows } = await db.query<Row>(`UPDATE ingest_endpoints SET enabled = false, updated_at = now() WHERE org_id = $1 AND id = $2 RETURNING ${COLUMNS}`, [orgId, id]);
  return rows[0] ? toEndpoint(rows[0]) : undefined;
}

export async function findIngestEndpointForDelivery(db: Queryable, id: string): Promise<IngestEndpointSecrets | undefined> {
  const { rows } = await db.query<{
    id: string;
    org_id: string;
    source: IngestSource;
    workflow: string;
    enabled: boolean;
    secret_ciphertext: string | null;
    previous_secret_ciphertext: string | null;
    previous_secret_expires_at: Date | null;
  }>(
    `SELECT id, org_id, source, workflow, enabled, secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at
       FROM ingest_endpoints WHERE id = $1`,
    [id],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    id: row.id,
    orgId: row.org_id,
    source: row.source,
    workflow: row.workflow,
    enabled: row.enabled,
    secretCiphertext: row.secret_ciphertext,
    previousSecretCiphertext: row.previous_secret_ciphertext,
    previousSecretExpiresAt: row.previous_secret_expires_at,
  };
}

export function createPostgresIngestEndpointStore(): IngestEndpointStore {
  return {
    insert: insertIngestEndpoint,
    list: listIngestEndpointRows,
    get: getIngestEndpointRow,
    rotateSecret: rotateIngestEndpointSecret,
    disable: disableIngestEndpointRow,
    findForDelivery: findIngestEndpointForDelivery,
  };
}
