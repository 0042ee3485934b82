/**
 * Who may talk to whom, as `mesh ui` draws it (issue 30), pure: module → seat edges from the same
 * composition the user list is built from (the `modules` and `seats` replies): a module claims a
 * seat (and holds it where it is assigned: the seat's `holders` are those nodes, R17), uses
 * (submits to) one, follows one's events, calls another module's tool (`<module>/<tool>`). Laid out in two columns: modules left, seats and tools right.
 */
import type { ModuleView, SeatView } from "../contracts/verbs.ts";

/** One edge: `module` may talk to `target` (a seat, or `<module>/<tool>`) as `kind` says. */
export type Edge = { module: string; target: string; kind: "claims" | "uses" | "follows" | "calls"; label: string };

/** Every edge of the modules and seats, each once, sorted. */
export function edgesOf(modules: readonly Pick<ModuleView, "name" | "claims" | "uses" | "follows">[], seats: readonly Pick<SeatView, "name" | "holders">[]): Edge[] {
  const edges = new Map<string, Edge>();
  const add = (e: Edge): void => { edges.set(`${e.module} ${e.kind} ${e.target}`, e); };
  const holders = new Map(seats.map((s) => [s.name, s.holders]));
  for (const m of modules) {
    for (const seat of m.claims) {
      const on = holders.get(seat) ?? [];
      add({ module: m.name, target: seat, kind: "claims", label: on.length === 0 ? "claims" : `holds on ${on.join(", ")}` });
    }
    for (const used of m.uses) add(used.includes("/") ? { module: m.name, target: used, kind: "calls", label: "calls tool" } : { module: m.name, target: used, kind: "uses", label: "uses" });
    for (const f of m.follows) add({ module: m.name, target: f.seat, kind: "follows", label: `follows ${f.event}` });
  }
  return [...edges.values()].sort((a, b) => `${a.module} ${a.target} ${a.kind}`.localeCompare(`${b.module} ${b.target} ${b.kind}`));
}

/** A laid-out graph: each box's place (row index in its column) and the edges between them. */
export type Layout = { modules: string[]; targets: string[]; edges: Edge[] };

/** The columns of `edges` plus every module (one with no edge too), each sorted. */
export function layoutOf(modules: readonly string[], edges: readonly Edge[]): Layout {
  const left = [...new Set([...modules, ...edges.map((e) => e.module)])].sort();
  const right = [...new Set(edges.map((e) => e.target))].sort();
  return { modules: left, targets: right, edges: [...edges] };
}
