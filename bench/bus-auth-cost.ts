/**
 * What bus authentication costs per envelope (README, "Bus authentication"): encode vs encode + sign on the
 * publisher's side, decode vs decode + verify on the coordinator's, for a typical RESULT (200-byte payload) and
 * larger ones. CPU only, one process: `npx tsx bench/bus-auth-cost.ts`. Figures in bench/README.md.
 */
import { performance } from "node:perf_hooks";
import { BusAuth } from "../src/bus/auth/bus-auth.js";
import { parseBusSecrets } from "../src/bus/auth/bus-keys.js";
import { EndpointKind, EnvelopeKind, ResultStatus, createEnvelope, decodeEnvelope, encodeEnvelope } from "../src/bus/codec.js";

const MAX = 1024 * 1024;
const auth = new BusAuth({ secrets: parseBusSecrets("bench:switchyard-bench-bus-secret-0123456789abcdef"), maxPayloadBytes: MAX });
const signer = auth.signer("role:writer");
const verifier = auth.verifier();

function envelope(payloadBytes: number) {
  return createEnvelope({
    id: crypto.randomUUID(),
    orgId: "acme",
    taskId: crypto.randomUUID(),
    stepId: "draft",
    attempt: 1,
    kind: EnvelopeKind.RESULT,
    status: ResultStatus.OK,
    source: { kind: EndpointKind.ROLE, id: "writer" },
    payload: { data: new Uint8Array(payloadBytes).fill(0x61), contentType: "application/json" },
    usage: { cost: 0.5 },
    createdAtMs: BigInt(Date.now()),
  });
}

/** Microseconds per call, median of 5 rounds. */
function measure(rounds: number, fn: () => unknown): number {
  const results: number[] = [];
  for (let r = 0; r < 5; r++) {
    const started = performance.now();
    for (let i = 0; i < rounds; i++) fn();
    results.push(((performance.now() - started) * 1000) / rounds);
  }
  return results.sort((a, b) => a - b)[2]!;
}

console.log("payload_bytes encode_us sign_us(encode+mac) decode_us verify_us(decode+mac) added_us");
for (const size of [200, 4096, 65536]) {
  const e = envelope(size);
  const rounds = size > 10_000 ? 2_000 : 20_000;
  const signed = signer.sign(e);
  const plain = encodeEnvelope(e, MAX);
  const encode = measure(rounds, () => encodeEnvelope(e, MAX));
  const sign = measure(rounds, () => signer.sign(e));
  const decode = measure(rounds, () => decodeEnvelope(plain, MAX));
  const verify = measure(rounds, () => {
    const d = decodeEnvelope(signed, MAX);
    if (!verifier.verify(signed, d).ok) throw new Error("does not verify");
  });
  const added = sign - encode + (verify - decode);
  console.log([size, encode, sign, decode, verify, added].map((v) => (typeof v === "number" && !Number.isInteger(v) ? v.toFixed(2) : v)).join(" "));
}
