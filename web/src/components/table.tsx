/** A table with column headers, scrolling sideways inside its own box on a narrow screen (not the whole page). */
import type { ComponentChildren } from "preact";

export function Table({ headers, class: className, children }: { headers: string[]; class?: string; children: ComponentChildren }) {
  return (
    <div class="table-wrap">
      <table class={className}>
        <thead>
          <tr>
            {headers.map((h) => (
              <th scope="col">{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
