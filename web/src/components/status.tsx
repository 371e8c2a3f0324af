/**
 * A status as text, a shape and a colour, so it reads without colour vision too. The shape is decoration
 * (aria-hidden); the word carries the meaning. The symbols are ones common fonts have (⏸ and ⧗ are not).
 */
const SHAPES: Record<string, string> = {
  pending: "○",
  running: "▶",
  dispatched: "▶",
  retrying: "↻",
  parked: "‖",
  waiting: "…",
  completed: "✓",
  approved: "✓",
  failed: "✗",
  denied: "✗",
  cancelled: "⊘",
};

export function shapeOf(word: string): string {
  return SHAPES[word] ?? "?";
}

export function Status({ word }: { word: string }) {
  return (
    <span class={`status status-${word}`} data-status={word}>
      <span class="status-shape" aria-hidden="true">
        {shapeOf(word)}
      </span>{" "}
      {word}
    </span>
  );
}
