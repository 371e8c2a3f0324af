/**
 * The connections port (issue 27 §2, secrets/vault): table `connections`, a tenant's outbound credentials. The
 * secret reaches it sealed (a vault envelope, AAD `connection:<id>`) and leaves it only through `sealedSecret`, for
 * the reply path's one opening point (vault/connection-secret.ts); every other read returns a `ConnectionRecord`,
 * which has no secret. Every method filters by the tenant it is given. The vault's functions (vault/connection-*.ts)
 * take it; the Postgres adapter is postgres-connection-store.ts.
 */
import type { ConnectionKind } from "../../core/reply-address.js";
import type { Queryable } from "../db.js";

/** A connection as the rest of the code sees it: every column of `connections` except the sealed secret. */
export interface ConnectionRecord {
  id: string;
  orgId: string;
  kind: ConnectionKind;
  /** Forge host (`github.com`), Slack team id (`T…`) or Cairn base URL: what an address must name exactly. */
  accountKey: string;
  /** Where the credential is sent; no trailing slash (`https://api.github.com`, `https://git.example/api/v1`). */
  apiBaseUrl: string;
  /** Empty: every target of the account; else repository globs, Slack channel ids or Cairn artifact id globs. */
  targets: string[];
  /** `fp_` + 16 hex (keyed HMAC of the secret): what listings show instead of the secret. */
  fingerprint: string;
  /** Learnt from our own Slack posts (echo suppression). */
  botId: string | null;
  appId: string | null;
  createdBy: string;
  createdAt: string;
  updatedAt: string;
  rotatedAt: string | null;
}

/** A checked connection with its secret already sealed. */
export interface NewConnectionRow {
  id: string;
  orgId: string;
  kind: ConnectionKind;
  accountKey: string;
  apiBaseUrl: string;
  targets: string[];
  secretCiphertext: string;
  secretFingerprint: string;
  createdBy: string;
  nowMs: number;
}

export interface ConnectionStore {
  /** Undefined when the tenant already has one for the kind and account (nothing written). */
  insert(db: Queryable, connection: NewConnectionRow): Promise<ConnectionRecord | undefined>;
  /** Locks the row (in the caller's transaction) and reads its secret's fingerprint; undefined when there is none. */
  lockFingerprint(db: Queryable, orgId: string, id: string): Promise<string | undefined>;
  /** Replaces the sealed secret of a row the caller locked. */
  replaceSecret(db: Queryable, orgId: string, id: string, secret: { ciphertext: string; fingerprint: string; nowMs: number }): Promise<ConnectionRecord>;
  /** Undefined when there was no such row. */
  delete(db: Queryable, orgId: string, id: string): Promise<ConnectionRecord | undefined>;
  /** The tenant's connections by kind and account. */
  list(db: Queryable, orgId: string): Promise<ConnectionRecord[]>;
  find(db: Queryable, orgId: string, id: string): Promise<ConnectionRecord | undefined>;
  /** The tenant's connection for exactly this kind and account key (at most one, by the unique index). */
  findByAccount(db: Queryable, orgId: string, kind: ConnectionKind, accountKey: string): Promise<ConnectionRecord | undefined>;
  /** The sealed secret of the tenant's connection `id`, or undefined. */
  sealedSecret(db: Queryable, orgId: string, id: string): Promise<string | undefined>;
  /** Fills in or changes the Slack bot and app ids (a null leaves one as it is); writes nothing when they match. */
  recordBot(db: Queryable, orgId: string, id: string, ids: { botId: string | null; appId: string | null }): Promise<void>;
}
