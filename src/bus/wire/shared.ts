/** Names and wire constants shared by the envelope codec's parts (init.ts, encode.ts, decode.ts). */
import type { MessageInitShape, UnknownField } from "@bufbuild/protobuf";
import type { EnvelopeSchema } from "../../gen/switchyard/bus/v1/envelope_pb.js";

export type EnvelopeInit = MessageInitShape<typeof EnvelopeSchema>;
export type Loose = Record<string, unknown>;
export type AnyMessage = Loose & { $typeName: string; $unknown?: UnknownField[] };

const P = "switchyard.bus.v1.";
export const ENVELOPE = `${P}Envelope`, ENDPOINT = `${P}Endpoint`, PAYLOAD = `${P}Payload`, REPLY_TO = `${P}ReplyTo`;
export const USAGE = `${P}Usage`, ERROR_INFO = `${P}ErrorInfo`, TRACE = `${P}TraceContext`, BUS_AUTH = `${P}BusAuth`;
export const VARINT = 0, I64 = 1, LEN = 2, SGROUP = 3, EGROUP = 4, I32 = 5;
export const INT64_MIN = -(2n ** 63n), INT64_MAX = 2n ** 63n - 1n, UINT64_MAX = 2n ** 64n - 1n, SAFE = 2n ** 53n;
