/**
 * Routing by the URL's hash (`#/tasks/ID`): the gateway serves one index.html and the app picks the page, and a
 * reload or a shared link lands on the same page.
 */
import { useEffect, useState } from "preact/hooks";

export interface Route {
  page: string;
  /** Path segments after the page (`#/tasks/abc` → ["abc"]), decoded. */
  args: string[];
  query: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const [path = "", query = ""] = hash.replace(/^#\/?/, "").split("?");
  const [page = "", ...args] = path.split("/").filter(Boolean).map(decodeURIComponent);
  return { page: page || "tasks", args, query: new URLSearchParams(query) };
}

export function href(...segments: string[]): string {
  return `#/${segments.map(encodeURIComponent).join("/")}`;
}

export function navigate(to: string): void {
  window.location.hash = to;
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener("hashchange", changed);
    return () => window.removeEventListener("hashchange", changed);
  }, []);
  return route;
}
