/**
 * The port through which a governed `foreign:KEY` hop leaves the perimeter (a sibling of publishing to a queue).
 * Until the FOREIGN endpoint feature lands, the only adapter fails the step closed with a clear code.
 */
import type { Queryable } from "../store/db.js";
import type { EnvelopeSpec, StepError } from "../core/model.js";

/**
 * `sentHash`: sha256 hex of the canonical JSON of exactly what will leave (the input after the registration's field
 * list); the engine puts it in the hop's audit row as its payload hash, in place of the hash of the hop's payload.
 */
export type ForeignDispatchOutcome = { accepted: true; sentHash?: string } | { accepted: false; error: StepError };

export interface ForeignDispatcher {
  /** Called inside the hop's transaction, after the audit row; must not send anything before commit. */
  dispatch(client: Queryable, envelope: EnvelopeSpec): Promise<ForeignDispatchOutcome>;
}

export const unavailableForeignDispatcher: ForeignDispatcher = {
  async dispatch(_client, envelope) {
    return {
      accepted: false,
      error: {
        code: "FOREIGN_UNAVAILABLE",
        message: `cannot reach ${envelope.destination}: FOREIGN dispatch is not available in this build`,
        retryable: false,
      },
    };
  },
};
