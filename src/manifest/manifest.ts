import { z } from "zod";
import { NAME_PATTERN } from "../names.ts";

/**
 * A module's manifest, `module.json` (DESIGN.md section 2). The parser is strict: an unknown
 * field is refused, naming it (R23). Whether a claimed seat exists is not the parser's to judge:
 * registration, where the whole catalogue is in view, decides that (R25).
 */

/** A mesh name: one subject token and one DNS label. */
export const MeshName = z
  .string()
  .regex(NAME_PATTERN, "use 1 to 63 lowercase letters, digits and dashes, starting and ending with a letter or digit");

/**
 * A seat a manifest declares. `protocol` is what is spoken to the holder; an empty protocol makes
 * a marker seat, accepted as written (R24). `accepts` gives one work queue per seat (R16);
 * `emits` names the events the holder announces. `provides` names the provision the holder grants
 * to modules that use the seat, and may equal the seat's own name (R26). A `node` scoped seat has
 * one holder per node ("this machine's packet filter").
 */
export const SeatDeclaration = z
  .object({
    protocol: z.string(),
    accepts: z.array(MeshName).default([]),
    emits: z.array(MeshName).default([]),
    provides: MeshName.optional(),
    scope: z.enum(["mesh", "node"]).default("mesh"),
  })
  .strict();
export type SeatDeclaration = z.infer<typeof SeatDeclaration>;

/** An event a module wants delivered: the emitter seat and the event's name. */
export const Follow = z.object({ seat: MeshName, event: MeshName }).strict();
export type Follow = z.infer<typeof Follow>;

/** A request/reply tool the module answers on its tool subject. */
export const Tool = z.object({ name: MeshName, description: z.string().default("") }).strict();
export type Tool = z.infer<typeof Tool>;

/** Another module's tool as a `uses` entry names it (R74): its module and the tool's name. */
export type ToolUse = { module: string; tool: string };

/**
 * The tool a `uses` entry names, `<module>/<tool>` (R74), or null when the entry is a seat name.
 * A mesh name holds no `/`, so the two forms never read alike. Pure.
 */
export function toolUseOf(use: string): ToolUse | null {
  const slash = use.indexOf("/");
  if (slash < 0) return null;
  const module = use.slice(0, slash);
  const tool = use.slice(slash + 1);
  return NAME_PATTERN.test(module) && NAME_PATTERN.test(tool) ? { module, tool } : null;
}

/**
 * One `uses` entry: a seat the module submits work to or takes a provision of, or another
 * module's tool it calls, `<module>/<tool>` (R74).
 */
export const Use = z.string().refine(
  (use) => NAME_PATTERN.test(use) || toolUseOf(use) !== null,
  "name a seat (lowercase letters, digits and dashes) or another module's tool as <module>/<tool> (R74)",
);

/** The seats a manifest uses, in its order: its `uses` entries that name no tool. Pure. */
export function usedSeats(manifest: { uses: readonly string[] }): string[] {
  return manifest.uses.filter((use) => toolUseOf(use) === null);
}

export const Manifest = z
  .object({
    name: MeshName,
    version: z.string().min(1),
    description: z.string().default(""),
    /**
     * How the node's agent runs this module (R72): a container `image` (through podman or docker)
     * or a `command` (argv, no shell) in its folder; `grace` is the seconds between SIGTERM and
     * SIGKILL when it is stopped (default 10); `by: "mesh"` says genesis's units and `mesh up` run
     * it (the bus, the controller), so no agent starts a second copy.
     */
    run: z
      .object({
        // Passed to podman or docker as one argument: a leading '-' would be read as a flag.
        image: z.string().regex(/^[^\s-]\S*$/, "give an image reference, e.g. \"docker.io/library/nginx:1.27\" (no spaces, no leading '-')").optional(),
        command: z.array(z.string()).min(1, "give the program and its arguments, e.g. [\"node\", \"main.js\"]").optional(),
        grace: z.number().int().min(0).max(3600).optional(),
        by: z.literal("mesh").optional(),
      })
      .strict()
      .default({}),
    seats: z.record(MeshName, SeatDeclaration).default({}),
    claims: z.array(MeshName).default([]),
    /** Seats it uses, and other modules' tools it calls as `<module>/<tool>` (R74). */
    uses: z.array(Use).default([]),
    follows: z.array(Follow).default([]),
    tools: z.array(Tool).default([]),
  })
  .strict();
export type Manifest = z.infer<typeof Manifest>;
