/**
 * `mesh version` (also `mesh -v` / `--version`): the CLI's version, and with a reachable mesh the
 * controller's (the verbs contract it answers with) and the bus's (the server's own info). Without
 * a mesh it prints the CLI's and says the rest is unknown: exit 0 either way.
 */
import { packageVersion } from "../files/packageFiles.ts";
import { meshClient } from "../client/client.ts";
import { VERBS_VERSION } from "../contracts/verbs.ts";
import { EXIT_OK, QUERY_GLOBALS, type CliContext } from "./context.ts";
import { printData } from "./output.ts";
import type { CliVerb } from "./busVerb.ts";

/** What `mesh version` reports; `null` where the mesh could not be asked, with `reason` saying why. */
export type VersionReport = {
  cli: string;
  /** The verbs contract version the controller answered with (its replies' `v`). */
  controller: { verbsContract: number } | null;
  /** The bus server's version, from the connection's server info. */
  bus: { server: string } | null;
  reason?: string;
};

/** Readable lines of a VersionReport: one per part, `unknown` for what was not reached, then why once. */
export function renderVersion(report: VersionReport): string[] {
  return [
    `mesh ${report.cli}`,
    `controller: ${report.controller === null ? "unknown" : `verbs contract v${report.controller.verbsContract}`}`,
    `bus: ${report.bus === null ? "unknown" : `nats-server ${report.bus.server}`}`,
    ...(report.reason === undefined ? [] : [`(${report.reason})`]),
  ];
}

/**
 * Asks the mesh for its versions: the bus's from the connection's server info, the controller's
 * from the `v` of a one-item `where`. Never throws: what fails is `null` with its reason.
 */
export async function meshVersions(ctx: CliContext): Promise<Omit<VersionReport, "cli">> {
  let bus: VersionReport["bus"] = null;
  try {
    const nc = await ctx.connection();
    bus = nc.info?.version === undefined ? null : { server: nc.info.version };
    const reply = await meshClient(nc, ctx.asker(), { timeoutMs: ctx.globals.timeoutMs }).ask("where", { limit: 1 });
    return { bus, controller: { verbsContract: reply.v ?? VERBS_VERSION } };
  } catch (error) {
    const reason = `${bus === null ? "no mesh reached" : "the controller did not answer"}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
    return { bus, controller: null, reason };
  }
}

/** `mesh version`. */
export const VERSION_CLI_VERB: CliVerb = {
  path: ["version"],
  examples: [["this CLI's, the controller's and the bus's versions", "mesh version"], ["as an object", "mesh version -o json"]],
  summary: "print the versions of mesh, and of the controller and the bus when a mesh answers",
  globals: QUERY_GLOBALS,
  async run(ctx) {
    const report: VersionReport = { cli: packageVersion(), ...(await meshVersions(ctx)) };
    if (ctx.globals.json) printData(ctx, report);
    else for (const line of renderVersion(report)) ctx.out(line);
    return EXIT_OK;
  },
};
