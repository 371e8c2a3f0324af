/** The bus secret every test process shares (runtimes, child processes, hand-made envelopes). */
import { BusAuth } from "../../src/bus/auth/bus-auth.js";
import { parseBusSecrets } from "../../src/bus/auth/bus-keys.js";
import { COORDINATOR_STREAM, type Bus } from "../../src/bus/bus.js";
import type { Envelope } from "../../src/bus/codec.js";

/** What SWITCHYARD_BUS_SECRET is set to for test child processes. */
export const TEST_BUS_SECRET_ENV = "test:switchyard-test-bus-secret-0123456789abcdef";
export const TEST_BUS_SECRETS = parseBusSecrets(TEST_BUS_SECRET_ENV);

/** Signers and verifier under the test secret, for envelopes a test publishes by hand. */
export function testBusAuth(maxPayloadBytes = 1024 * 1024): BusAuth {
  return new BusAuth({ secrets: TEST_BUS_SECRETS, maxPayloadBytes });
}

/** Publishes envelopes to the coordinator inbox signed as `sender` (`role:NAME`, `team:NAME`, `gateway`). */
export async function publishSigned(
  rt: { bus: Bus; busAuth: BusAuth },
  sender: string,
  envelopes: readonly Envelope[],
): Promise<void> {
  const signer = rt.busAuth.signer(sender);
  await rt.bus.publishEncoded(envelopes.map((envelope) => ({ stream: COORDINATOR_STREAM, data: signer.sign(envelope) })));
}
