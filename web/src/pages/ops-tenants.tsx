/** Tenants and API keys: create (the key is shown once, here, and never again), list, revoke. */
import { useState } from "preact/hooks";
import { ApiKeyKind } from "../../../src/gen/switchyard/api/v1/admin_pb.js";
import { ProblemBox } from "../components/problem";
import { useAction, useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatTime } from "../format";
import { Table } from "../components/table";

export function Tenants() {
  const { api } = useConsole();
  const tenants = useLoad((signal) => api.admin.listTenants({}, { signal }), [api]);
  const keys = useLoad((signal) => api.admin.listApiKeys({}, { signal }), [api]);
  const action = useAction();
  const [secret, setSecret] = useState<{ what: string; secret: string } | undefined>(undefined);
  const field = (form: HTMLFormElement, name: string) => (form.elements.namedItem(name) as HTMLInputElement).value.trim();
  const createTenant = (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    void action.run(async () => {
      const created = await api.admin.createTenant({ orgId: field(form, "orgId"), name: field(form, "name") });
      setSecret({ what: `the first key of tenant ${created.tenant?.orgId}`, secret: created.secret });
      form.reset();
      tenants.reload();
      keys.reload();
    });
  };
  const createKey = (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const orgId = field(form, "orgId");
    void action.run(async () => {
      const created = await api.admin.createApiKey({ orgId, admin: orgId === "", name: field(form, "name") });
      setSecret({ what: `key ${created.apiKey?.name} (${orgId || "admin"})`, secret: created.secret });
      form.reset();
      keys.reload();
    });
  };
  const revoke = (id: string) =>
    action.run(async () => {
      await api.admin.revokeApiKey({ id });
      keys.reload();
    });
  return (
    <section aria-labelledby="tenants-title">
      <h2 id="tenants-title">Tenants and API keys</h2>
      <ProblemBox problem={tenants.problem ?? keys.problem ?? action.problem} />
      {secret && (
        <div class="secret" role="status">
          <p>
            This is {secret.what}. It is shown <strong>once</strong>: copy it now.
          </p>
          <code class="secret-value">{secret.secret}</code>
          <button type="button" onClick={() => setSecret(undefined)}>
            I have stored it
          </button>
        </div>
      )}
      <form class="inline-form" onSubmit={createTenant} aria-label="Create a tenant">
        <label>
          Tenant id <input name="orgId" required pattern="[a-z0-9][a-z0-9_\-]{0,62}" />
        </label>
        <label>
          Name <input name="name" />
        </label>
        <button type="submit" disabled={action.busy}>
          Create tenant
        </button>
      </form>
      <Table headers={["Tenant", "Name", "Daily budget", "Created"]}>
        {tenants.data?.tenants.map((t) => (
          <tr>
            <td>{t.orgId}</td>
            <td>{t.name}</td>
            <td>{t.dailyBudget ?? "unbounded"}</td>
            <td>{formatTime(t.createdAt)}</td>
          </tr>
        ))}
      </Table>
      <form class="inline-form" onSubmit={createKey} aria-label="Create an API key">
        <label>
          Tenant (empty: an admin key) <input name="orgId" />
        </label>
        <label>
          Key name <input name="name" required />
        </label>
        <button type="submit" disabled={action.busy}>
          Create key
        </button>
      </form>
      <Table headers={["Key", "Kind", "Tenant", "Name", "Last used", "Revoked", ""]}>
        {keys.data?.apiKeys.map((k) => (
          <tr>
            <td>
              <code>{k.prefix}…</code>
            </td>
            <td>{k.kind === ApiKeyKind.ADMIN ? "admin" : "tenant"}</td>
            <td>{k.orgId || "—"}</td>
            <td>{k.name}</td>
            <td>{formatTime(k.lastUsedAt)}</td>
            <td>{formatTime(k.revokedAt)}</td>
            <td>
              {!k.revokedAt && (
                <button type="button" class="danger" disabled={action.busy} onClick={() => void revoke(k.id)}>
                  Revoke
                </button>
              )}
            </td>
          </tr>
        ))}
      </Table>
    </section>
  );
}
