/**
 * The providers an ingest endpoint can receive from, and the URL a provider posts to. Kept apart from
 * endpoint-store.ts (which needs the database) so the CLI can describe `ingest create --source` without loading it.
 */
export type IngestSource = "github" | "gitea" | "slack" | "cairn" | "generic";
export const INGEST_SOURCES: readonly IngestSource[] = ["github", "gitea", "slack", "cairn", "generic"];

/** Where a provider posts deliveries for an endpoint (`publicUrl`: config.gateway.publicUrl). */
export function ingestUrl(publicUrl: string, id: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/api/v1/ingest/${id}`;
}
