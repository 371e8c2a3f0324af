/**
 * One HTTP(S) exchange over node:http(s) whose socket connects to an address we already checked, never to whatever
 * DNS says at connect time. The URL's host name still travels as the Host header and as the TLS servername (SNI and
 * certificate check), so name-based virtual hosting and TLS work as usual.
 *
 * The response body is read completely, up to `maxResponseBytes` (decoded size when the server compressed it), so
 * that the size cap and the total deadline cover the whole exchange and every failure surfaces from one promise —
 * unless the caller asks for a 2xx response to be streamed (`stream`): its body is then handed on as it arrives, the
 * size cap and the signal (the total deadline) still applied to every chunk until it ends.
 */
import { request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { LookupFunction, Socket } from "node:net";
import type { Readable } from "node:stream";
import { pipeline, Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { isIpLiteral, type IpAddress } from "./cidr.js";
import { EgressReason, egressError, isTransientSocketCode } from "./egress-errors.js";

export interface PinnedRequest {
  url: URL;
  /** The checked address the socket must connect to. */
  address: IpAddress;
  method: string;
  headers: OutgoingHttpHeaders;
  body?: Uint8Array;
  maxResponseBytes: number;
  /** Aborts the exchange; its `reason` is what the returned promise rejects with. */
  signal: AbortSignal;
  /** The connection (TCP, and TLS for https) is established. */
  onConnected: () => void;
  /** Trust anchors for https, replacing the default store (tests, private CAs). */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Whether to stream this (2xx) response's body instead of reading it whole. @defaultValue never */
  stream?: (res: IncomingMessage) => boolean;
  /** A streamed body ended, failed or was abandoned: the caller's deadline may be released. */
  onStreamEnd?: () => void;
}

export interface PinnedResponse {
  status: number;
  statusText: string;
  /** Raw header pairs in arrival order (repeated headers stay repeated). */
  headers: Array<[string, string]>;
  /** The whole body, or (when streamed) the body as it arrives. */
  body: Buffer | Readable;
}

const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  "x-gzip": createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

export function sendPinned(req: PinnedRequest): Promise<PinnedResponse> {
  const target = req.url.host;
  return new Promise<PinnedResponse>((resolve, reject) => {
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      req.signal.removeEventListener("abort", onAbort);
      outgoing?.destroy();
      reject(error);
    };
    const succeed = (response: PinnedResponse) => {
      if (settled) return;
      settled = true;
      req.signal.removeEventListener("abort", onAbort);
      resolve(response);
    };
    const onAbort = () => fail(req.signal.reason);

    const https = req.url.protocol === "https:";
    let outgoing: ClientRequest | undefined;
    try {
      outgoing = (https ? httpsRequest : httpRequest)(requestOptions(req));
    } catch (error) {
      // node:http validates the method and header values synchronously.
      const message = `egress to ${target}: ${(error as Error).message}`;
      return fail(egressError(ErrorCode.InvalidArgument, message, { reason: EgressReason.UrlInvalid, transient: false }, error));
    }

    outgoing.once("socket", (socket: Socket) => socket.once(https ? "secureConnect" : "connect", req.onConnected));
    // `on`, not `once`: a request destroyed after a failure may still emit errors, and an unheard one would crash.
    outgoing.on("error", (error: NodeJS.ErrnoException) => {
      if (req.signal.aborted) return fail(req.signal.reason);
      fail(connectionError(target, error));
    });
    outgoing.once("response", (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300 && req.stream?.(res)) return succeed(streamResponse(res, req, target));
      readResponse(res, req.maxResponseBytes, target).then(succeed, fail);
    });

    if (req.signal.aborted) return onAbort();
    req.signal.addEventListener("abort", onAbort, { once: true });
    outgoing.end(req.body === undefined ? undefined : Buffer.from(req.body.buffer, req.body.byteOffset, req.body.byteLength));
  });
}

function requestOptions(req: PinnedRequest): RequestOptions {
  const https = req.url.protocol === "https:";
  const hostname = req.url.hostname.startsWith("[") ? req.url.hostname.slice(1, -1) : req.url.hostname;
  return {
    protocol: req.url.protocol,
    hostname,
    port: req.url.port === "" ? (https ? 443 : 80) : Number(req.url.port),
    method: req.method,
    path: `${req.url.pathname}${req.url.search}`,
    headers: req.headers,
    lookup: pinnedLookup(req.address),
    // A fresh connection per call: a pooled socket could outlive the check that admitted its address.
    agent: false,
    // SNI and the certificate check use the name, not the pinned address (TLS forbids IP servernames).
    ...(https && !isIpLiteral(hostname) ? { servername: hostname.replace(/\.$/, "") } : {}),
    ...(https && req.ca !== undefined ? { ca: req.ca } : {}),
  };
}

function pinnedLookup(pinned: IpAddress): LookupFunction {
  // Node asks with `all: true` when it races address families (autoSelectFamily); answer in either shape.
  return (_hostname, options, callback) => {
    if (options?.all) (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address: pinned.address, family: pinned.family }]);
    else callback(null, pinned.address, pinned.family);
  };
}

/** A 2xx body handed on as it arrives, under the size cap and the request's signal until it ends. */
function streamResponse(res: IncomingMessage, req: PinnedRequest, target: string): PinnedResponse {
  const encoding = String(res.headers["content-encoding"] ?? "").trim().toLowerCase();
  const makeDecoder = DECODERS[encoding];
  let total = 0;
  const capped = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      total += chunk.length;
      if (total > req.maxResponseBytes) {
        callback(
          egressError(ErrorCode.PayloadTooLarge, `egress to ${target}: response body exceeds ${req.maxResponseBytes} bytes`, {
            reason: EgressReason.ResponseTooLarge,
            transient: false,
            maxResponseBytes: req.maxResponseBytes,
            receivedBytes: total,
          }),
        );
        return;
      }
      callback(null, chunk);
    },
  });
  const onAbort = () => capped.destroy(req.signal.reason as Error);
  req.signal.addEventListener("abort", onAbort, { once: true });
  let ended = false;
  const done = () => {
    if (ended) return;
    ended = true;
    req.signal.removeEventListener("abort", onAbort);
    req.onStreamEnd?.();
  };
  const stages: NodeJS.ReadWriteStream[] = makeDecoder ? [makeDecoder(), capped] : [capped];
  // A reset mid-body surfaces to the reader as the stream's error; the caller's deadline is released either way.
  (pipeline as unknown as (...streams: unknown[]) => void)(res, ...stages, (error: NodeJS.ErrnoException | null) => {
    if (error && !capped.destroyed) capped.destroy(error instanceof SwitchyardError ? error : connectionError(target, error));
    done();
  });
  capped.once("close", done);
  return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? "", headers: responseHeaders(res, makeDecoder !== undefined), body: capped };
}

function responseHeaders(res: IncomingMessage, decoded: boolean): Array<[string, string]> {
  const headers: Array<[string, string]> = [];
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i]!;
    const lower = name.toLowerCase();
    // The body handed on is decoded, so its encoding and length headers would describe the wrong bytes.
    if (decoded && (lower === "content-encoding" || lower === "content-length")) continue;
    headers.push([name, res.rawHeaders[i + 1]!]);
  }
  return headers;
}

async function readResponse(res: IncomingMessage, maxBytes: number, target: string): Promise<PinnedResponse> {
  const tooLarge = (seen: number) =>
    egressError(ErrorCode.PayloadTooLarge, `egress to ${target}: response body exceeds ${maxBytes} bytes`, {
      reason: EgressReason.ResponseTooLarge,
      transient: false,
      maxResponseBytes: maxBytes,
      ...(seen > 0 ? { receivedBytes: seen } : {}),
    });
  const declared = Number(res.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    res.destroy();
    throw tooLarge(declared);
  }
  const encoding = String(res.headers["content-encoding"] ?? "").trim().toLowerCase();
  const makeDecoder = DECODERS[encoding];
  let source: Readable = res;
  if (makeDecoder) {
    const decoder = makeDecoder();
    pipeline(res, decoder, () => undefined);
    source = decoder as unknown as Readable;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of source) {
      const buffer = chunk as Buffer;
      total += buffer.length;
      if (total > maxBytes) {
        res.destroy();
        throw tooLarge(total);
      }
      chunks.push(buffer);
    }
  } catch (error) {
    if (error instanceof SwitchyardError) throw error;
    throw connectionError(target, error as NodeJS.ErrnoException);
  }
  return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? "", headers: responseHeaders(res, makeDecoder !== undefined), body: Buffer.concat(chunks, total) };
}

function connectionError(target: string, error: NodeJS.ErrnoException): SwitchyardError {
  const code = error.code ?? "UNKNOWN";
  return egressError(
    ErrorCode.Unavailable,
    `egress to ${target} failed: ${error.message}`,
    { reason: EgressReason.ConnectionFailed, transient: isTransientSocketCode(code), errorCode: code },
    error,
  );
}
