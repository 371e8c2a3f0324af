/** For an admin session: which tenant the tenant pages look at (sent as `Switchyard-Tenant`). */
import { useConsole } from "../context";
import { useLoad } from "./use-load";

export function TenantPicker() {
  const { api, tenant, setTenant } = useConsole();
  const tenants = useLoad((signal) => api.admin.listTenants({}, { signal }), [api]);
  return (
    <label class="tenant-picker">
      tenant{" "}
      <select value={tenant} onChange={(e) => setTenant((e.target as HTMLSelectElement).value)}>
        <option value="">(pick one)</option>
        {tenants.data?.tenants.map((t) => (
          <option value={t.orgId}>{t.orgId}</option>
        ))}
      </select>
    </label>
  );
}
