/**
 * A workflow's DAG as SVG, laid out by dagre. Each node shows its step id, destination and status — the status by
 * word, shape symbol and colour class (styles.css), so none of them is needed alone. Delegations hang off their
 * origin step with dashed edges. Positions are SVG attributes, never inline styles (the CSP forbids those).
 */
import { Graph, layout } from "@dagrejs/dagre";
import { useMemo } from "preact/hooks";
import { shapeOf } from "./status";

export interface DagNode {
  id: string;
  destination: string;
  /** A status word (pending, completed, …); undefined for a workflow drawn without a task. */
  status?: string;
  delegation?: boolean;
}

export interface DagEdge {
  from: string;
  to: string;
  delegation?: boolean;
}

const WIDTH = 200;
const HEIGHT = 66;

export function Dag({ nodes, edges, title }: { nodes: DagNode[]; edges: DagEdge[]; title: string }) {
  const laid = useMemo(() => {
    const g = new Graph();
    g.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 48, marginx: 8, marginy: 8 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const n of nodes) g.setNode(n.id, { width: WIDTH, height: HEIGHT });
    for (const e of edges) if (g.hasNode(e.from) && g.hasNode(e.to)) g.setEdge(e.from, e.to);
    layout(g);
    const graph = g.graph();
    return {
      width: Math.ceil(graph.width ?? WIDTH),
      height: Math.ceil(graph.height ?? HEIGHT),
      nodes: nodes.map((n) => ({ ...n, x: g.node(n.id).x, y: g.node(n.id).y })),
      edges: edges.filter((e) => g.hasEdge(e.from, e.to)).map((e) => ({ ...e, points: g.edge(e.from, e.to).points ?? [] })),
    };
  }, [nodes, edges]);
  return (
    <figure class="dag">
      <svg viewBox={`0 0 ${laid.width} ${laid.height}`} width={laid.width} height={laid.height} role="img" aria-label={title}>
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="dag-arrow" />
          </marker>
        </defs>
        {laid.edges.map((e) => (
          <path
            class={e.delegation ? "dag-edge dag-edge-delegation" : "dag-edge"}
            d={e.points.map((p: { x: number; y: number }, i: number) => `${i === 0 ? "M" : "L"} ${p.x} ${p.y}`).join(" ")}
            marker-end="url(#arrow)"
          />
        ))}
        {laid.nodes.map((n) => (
          <g class={`dag-node status-${n.status ?? "none"}${n.delegation ? " dag-delegation" : ""}`} transform={`translate(${n.x - WIDTH / 2}, ${n.y - HEIGHT / 2})`} data-step={n.id}>
            <title>{`${n.id} → ${n.destination}${n.status ? `: ${n.status}` : ""}`}</title>
            <rect width={WIDTH} height={HEIGHT} rx={n.delegation ? 2 : 10} />
            <text x={10} y={20} class="dag-id">
              {n.status ? `${shapeOf(n.status)} ` : ""}
              {n.id}
            </text>
            {n.status && (
              <text x={10} y={37} class="dag-sub">
                {n.status}
              </text>
            )}
            <text x={10} y={n.status ? 54 : 40} class="dag-sub">
              {n.destination}
            </text>
          </g>
        ))}
      </svg>
    </figure>
  );
}

/** The DAG of a workflow definition in its file format (`steps: [{id, to, needs}]`). */
export function definitionGraph(definition: unknown): { nodes: DagNode[]; edges: DagEdge[] } {
  const steps = ((definition as { steps?: unknown[] } | null)?.steps ?? []) as { id?: string; to?: unknown; needs?: string[] }[];
  const nodes: DagNode[] = [];
  const edges: DagEdge[] = [];
  for (const step of steps) {
    if (typeof step.id !== "string") continue;
    nodes.push({ id: step.id, destination: destinationText(step.to) });
    for (const need of step.needs ?? []) edges.push({ from: need, to: step.id });
  }
  return { nodes, edges };
}

function destinationText(to: unknown): string {
  if (typeof to === "string") return to;
  if (to && typeof to === "object" && "kind" in to && "id" in to) return `${String((to as { kind: unknown }).kind)}:${String((to as { id: unknown }).id)}`;
  return "?";
}
