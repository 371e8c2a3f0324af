/**
 * Reading a secret for the CLI: only ever from stdin (`--secret-stdin`), never from a flag, where it would land in
 * shell history and process listings. The whole input is the secret, less ONE trailing newline (what `echo` or a
 * here-string adds); an empty secret is refused. Nothing here ever prints or quotes it.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

/** More than any credential we store; stops `cat /dev/zero |` from filling memory. */
const MAX_STDIN_BYTES = 64 * 1024;

export type SecretSource = AsyncIterable<string | Uint8Array>;

export async function readSecretFromStdin(stdin: SecretSource, flag = "--secret-stdin"): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stdin) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : Buffer.from(chunk);
    bytes += buffer.byteLength;
    if (bytes > MAX_STDIN_BYTES) {
      throw new SwitchyardError(ErrorCode.InvalidArgument, `${flag}: stdin holds more than ${MAX_STDIN_BYTES} bytes; pipe in only the secret`, { details: { path: flag } });
    }
    chunks.push(buffer);
  }
  let secret = Buffer.concat(chunks).toString("utf8");
  if (secret.endsWith("\r\n")) secret = secret.slice(0, -2);
  else if (secret.endsWith("\n")) secret = secret.slice(0, -1);
  if (secret === "") throw new SwitchyardError(ErrorCode.InvalidArgument, `${flag}: stdin was empty; pipe the secret in (e.g. \`printenv TOKEN | switchyard connection add … --secret-stdin\`)`, { details: { path: flag } });
  return secret;
}

/** Refuses a secret given as a flag value without quoting it. */
export function refuseSecretFlag(): never {
  throw new SwitchyardError(ErrorCode.InvalidArgument, "--secret: a secret is never taken from a flag (shell history, process listings); pipe it in with --secret-stdin", {
    details: { path: "--secret" },
  });
}
