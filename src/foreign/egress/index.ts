/**
 * The egress guard for foreign calls: a guarded `fetch`, the address and host rules behind it, retries, and one
 * circuit breaker per (tenant, agent). See guarded-fetch.ts for the order of checks.
 */
export { createGuardedFetch, defaultEgressResolver, type EgressResolver, type GuardedFetchOptions } from "./guarded-fetch.js";
export { HostAllowlist } from "./host-allowlist.js";
export { checkAddress, blockedRange, type AddressVerdict, type BlockedRange } from "./address-policy.js";
export { CidrSet, parseCidr, normalizeIp, isIpLiteral, type Cidr, type IpAddress, type IpFamily } from "./cidr.js";
export {
  EgressReason,
  TRANSIENT_STATUSES,
  egressError,
  isTransientFailure,
  isTransientStatus,
  isTransientSocketCode,
  retryAfterMs,
  type EgressErrorDetails,
} from "./egress-errors.js";
export { withRetries, backoffDelay, type RetryOptions } from "./retries.js";
export { BreakerRegistry, defaultIsBreakerFailure, type BreakerRegistryOptions, type BreakerSnapshot, type BreakerState } from "./breakers.js";
