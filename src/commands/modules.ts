import type { BodyOf, ModuleView } from "../contracts/verbs.ts";
import { everyModule, nodesOfModule, type State } from "../projections/index.ts";
import { query } from "./envelope.ts";

/** Each module (sorted): version, whether issued, the nodes it is on, and what its manifest states. */
export function answer(state: State): BodyOf<"modules"> {
  return {
    modules: everyModule(state.modules)
      .sort((a, b) => a.manifest.name.localeCompare(b.manifest.name))
      .map(({ manifest, registeredAt, issued }) => ({
        name: manifest.name,
        version: manifest.version,
        registeredAt,
        issued,
        nodes: [...nodesOfModule(state.assignments, manifest.name)],
        declares: Object.keys(manifest.seats).sort(),
        claims: [...manifest.claims],
        uses: [...manifest.uses],
        follows: manifest.follows.map((f) => ({ ...f })),
        tools: manifest.tools.map((t) => t.name),
      })),
  };
}

export const modules = query("modules", {
  answer,
  page: { field: "modules", key: (item) => (item as ModuleView).name, compare: (a, b) => a.localeCompare(b) },
});
