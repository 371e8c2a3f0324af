/**
 * The console's shell: the sign-in gate, then a header with the pages' links and the page the hash names. The
 * session is asked for on load (a reload keeps the cookie); a 401 from any call returns to sign-in.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { createApi } from "./api";
import { ConsoleContext, useConsole, type Console } from "./context";
import { href, useRoute } from "./router";
import { currentSession, signOut, type Session } from "./session";
import { SignIn } from "./pages/sign-in";
import { TasksPage } from "./pages/tasks";
import { TaskPage } from "./pages/task";
import { ApprovalsPage } from "./pages/approvals";
import { AuditPage } from "./pages/audit";
import { OperationsPage } from "./pages/operations";
import { WorkflowsPage } from "./pages/workflows";
import { AgentsPage } from "./pages/agents";
import { TenantPicker } from "./components/tenant-picker";

const PAGES = [
  { page: "tasks", label: "Tasks" },
  { page: "approvals", label: "Approvals" },
  { page: "workflows", label: "Workflows" },
  { page: "agents", label: "Foreign agents" },
  { page: "audit", label: "Audit" },
] as const;

export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  useEffect(() => {
    currentSession()
      .then((s) => setSession(s ?? null))
      .catch(() => setSession(null));
  }, []);
  if (session === undefined) return <p class="loading">Loading…</p>;
  if (session === null) return <SignIn onSignedIn={setSession} />;
  return <SignedIn session={session} onSignedOut={() => setSession(null)} />;
}

function SignedIn({ session, onSignedOut }: { session: Session; onSignedOut: () => void }) {
  const [tenant, setTenant] = useState(session.tenant);
  const tenantRef = useRef(tenant);
  tenantRef.current = tenant;
  const api = useMemo(() => createApi({ csrfToken: session.csrfToken, tenant: () => (session.admin ? tenantRef.current : undefined), onSignedOut }), [session]);
  const value: Console = { api, session, tenant, setTenant };
  const route = useRoute();
  const pages = session.admin ? [...PAGES, { page: "operations", label: "Operations" }] : PAGES;
  const out = async () => {
    await signOut(session.csrfToken);
    onSignedOut();
  };
  return (
    <ConsoleContext.Provider value={value}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Switchyard</span>
        <nav aria-label="Pages">
          <ul>
            {pages.map((p) => (
              <li>
                <a href={href(p.page)} aria-current={route.page === p.page ? "page" : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          {session.admin ? <TenantPicker /> : <span>tenant <strong>{session.tenant}</strong></span>}
          <button type="button" onClick={out}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {/* Keyed by tenant: an admin's switch of tenant starts every page afresh (no rows of the last one). */}
        <Page key={tenant} page={route.page} args={route.args} />
      </main>
    </ConsoleContext.Provider>
  );
}

function Page({ page, args }: { page: string; args: string[] }) {
  const { session, tenant } = useConsole();
  if (page === "operations") return session.admin ? <OperationsPage /> : <p>Operations need an admin key.</p>;
  if (!tenant) return <p class="hint">Pick the tenant to look at (top right): an admin key sees one tenant at a time.</p>;
  switch (page) {
    case "tasks":
      return args[0] ? <TaskPage id={args[0]} /> : <TasksPage />;
    case "approvals":
      return <ApprovalsPage />;
    case "workflows":
      return <WorkflowsPage ref_={args[0]} />;
    case "agents":
      return <AgentsPage />;
    case "audit":
      return <AuditPage />;
    default:
      return <p>No such page: {page}</p>;
  }
}

