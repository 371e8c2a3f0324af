/**
 * Loading a package that is an optional dependency of switchyard (a worker's `npm install switchyard
 * --omit=optional` leaves the server's out: README "Installing for a worker"). A missing package is an UNAVAILABLE
 * SwitchyardError that names it and the feature that needs it; any other failure to load is rethrown as it is.
 */
import { ErrorCode, SwitchyardError } from "../errors.js";

/**
 * `needs` says what the package is for, as the start of a sentence ("secret scanning of replies needs"); `orElse`
 * is another way out besides installing it, if there is one.
 */
export async function loadOptionalPackage<T>(name: string, load: () => Promise<T>, why: { needs: string; orElse?: string; retryable?: boolean }): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if ((error as { code?: unknown })?.code !== "ERR_MODULE_NOT_FOUND") throw error;
    throw new SwitchyardError(
      ErrorCode.Unavailable,
      `${why.needs} ${name}, which is not installed (an optional dependency of switchyard): install switchyard without --omit=optional${why.orElse ? `, or ${why.orElse}` : ""}`,
      { cause: error, details: { package: name, ...(why.retryable === false ? { retryable: false } : {}) } },
    );
  }
}
