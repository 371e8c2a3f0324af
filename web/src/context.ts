/** What every page reaches: the API clients and the session (who is signed in, for which tenant). */
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { ApiClients } from "./api";
import type { Session } from "./session";

export interface Console {
  api: ApiClients;
  session: Session;
  /** The tenant tenant pages show: the session's, or the one an admin picked (empty until then). */
  tenant: string;
  setTenant(tenant: string): void;
}

export const ConsoleContext = createContext<Console | undefined>(undefined);

export function useConsole(): Console {
  const value = useContext(ConsoleContext);
  if (!value) throw new Error("useConsole outside the signed-in app");
  return value;
}
