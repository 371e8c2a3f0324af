/**
 * The delivery route's view of endpoints, cached briefly in memory with their secrets opened, so a burst of
 * deliveries costs no lookup and no decryption per request. A rotation or a disable is seen within `ttlMs`
 * (a few seconds) on every gateway; the rotated-out secret stays valid far longer than that anyway.
 *
 * Unknown ids are not cached (random URLs must not fill memory); the cache is bounded by `maxEntries`.
 */
import type { Logger } from "../logger.js";
import type { Queryable } from "../store/db.js";
import type { IngestEndpointStore } from "../store/ingest/endpoint-store.js";
import type { SecretCipher } from "../vault/secret-cipher.js";
import { findEndpointForDelivery, sealAad, type IngestSource } from "./endpoint-store.js";

export interface ResolvedEndpoint {
  id: string;
  orgId: string;
  source: IngestSource;
  workflow: string;
  enabled: boolean;
  /** The opened secret; null for generic. */
  secret: string | null;
  /** The rotated-out secret while it is still valid. */
  previous?: { secret: string; expiresAtMs: number };
  /** Set when a secret could not be opened (no key configured, or a key ring that lost its key): nothing verifies. */
  unverifiable?: string;
}

export interface EndpointCacheOptions {
  db: Queryable;
  /** The ingest endpoints port (runtime.stores.ingestEndpoints). */
  store: IngestEndpointStore;
  cipher: SecretCipher | undefined;
  /** @defaultValue 5000 */
  ttlMs?: number;
  /** @defaultValue 10 000 */
  maxEntries?: number;
  clock?: () => number;
  logger?: Logger;
}

export class EndpointCache {
  private readonly entries = new Map<string, { value: ResolvedEndpoint; expiresAtMs: number }>();
  private readonly loading = new Map<string, Promise<ResolvedEndpoint | undefined>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly clock: () => number;

  constructor(private readonly options: EndpointCacheOptions) {
    this.ttlMs = options.ttlMs ?? 5000;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.clock = options.clock ?? Date.now;
  }

  async get(id: string): Promise<ResolvedEndpoint | undefined> {
    const hit = this.entries.get(id);
    if (hit && hit.expiresAtMs > this.clock()) return hit.value;
    let load = this.loading.get(id);
    if (!load) {
      load = this.load(id).finally(() => this.loading.delete(id));
      this.loading.set(id, load);
    }
    return load;
  }

  /** The secrets a delivery may be signed with now: the current one, and the previous one within its grace. */
  secretsOf(endpoint: ResolvedEndpoint): string[] {
    const secrets = endpoint.secret === null ? [] : [endpoint.secret];
    if (endpoint.previous && endpoint.previous.expiresAtMs > this.clock()) secrets.push(endpoint.previous.secret);
    return secrets;
  }

  /** Forget an endpoint at once (this process changed it). */
  invalidate(id: string): void {
    this.entries.delete(id);
  }

  private async load(id: string): Promise<ResolvedEndpoint | undefined> {
    const row = await findEndpointForDelivery(this.options.store, this.options.db, id);
    if (!row) return undefined;
    const value: ResolvedEndpoint = { id: row.id, orgId: row.orgId, source: row.source, workflow: row.workflow, enabled: row.enabled, secret: null };
    if (row.secretCiphertext !== null) {
      const cipher = this.options.cipher;
      if (!cipher) {
        value.unverifiable = "no encryption key is configured (SWITCHYARD_SECRET_ENCRYPTION_KEY), so the endpoint's secret cannot be opened";
      } else {
        try {
          value.secret = cipher.open(row.secretCiphertext, sealAad(row.id));
          if (row.previousSecretCiphertext !== null && row.previousSecretExpiresAt !== null) {
            value.previous = { secret: cipher.open(row.previousSecretCiphertext, sealAad(row.id)), expiresAtMs: row.previousSecretExpiresAt.getTime() };
          }
        } catch (error) {
          value.secret = null;
          value.unverifiable = (error as Error).message;
          this.options.logger?.error({ endpointId: id, orgId: row.orgId, err: error }, "ingest endpoint secret cannot be opened; its deliveries are refused");
        }
      }
    }
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(id, { value, expiresAtMs: this.clock() + this.ttlMs });
    return value;
  }
}
