/**
 * The providers IngestService accepts (`IngestSource` in proto/switchyard/api/v1/ingest.proto), for describing and
 * checking `ingest create --source` before anything is called. Light on purpose: every command's registration loads
 * it, so it loads neither the client nor the database.
 */
export { INGEST_SOURCES, type IngestSource } from "../../ingest/sources.js";
