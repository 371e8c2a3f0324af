/**
 * A JSON value, pretty-printed; past `limit` characters it is cut, with a download of the whole value (a Blob
 * URL: nothing inline, so the page's CSP allows it).
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { useEffect, useMemo, useState } from "preact/hooks";

export function JsonView({ value, name, limit = 2000 }: { value: JsonValue | undefined; name: string; limit?: number }) {
  const text = useMemo(() => JSON.stringify(value ?? null, null, 2), [value]);
  const cut = text.length > limit;
  const [href, setHref] = useState<string | undefined>(undefined);
  useEffect(() => {
    if (!cut) return;
    const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
    setHref(url);
    return () => URL.revokeObjectURL(url);
  }, [text, cut]);
  return (
    <div class="json">
      <pre tabIndex={0}>{cut ? `${text.slice(0, limit)}\n…` : text}</pre>
      {cut && href && (
        <a href={href} download={`${name}.json`}>
          Download all {text.length.toLocaleString()} characters
        </a>
      )}
    </div>
  );
}
