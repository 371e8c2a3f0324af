/** Operations (admin sessions only): flags, dead letters, tenants and API keys, one section each. */
import { DeadLetters } from "./ops-dead-letters";
import { Flags } from "./ops-flags";
import { Tenants } from "./ops-tenants";

export function OperationsPage() {
  return (
    <section>
      <h1>Operations</h1>
      <Flags />
      <DeadLetters />
      <Tenants />
    </section>
  );
}
