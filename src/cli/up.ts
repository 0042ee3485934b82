import { EXIT_OK, EXIT_USAGE, UsageError, type CliContext } from "./context.ts";
import type { CliVerb } from "./verbs.ts";
import { up, detachedLauncher, readSummary, operatorConnection, UpError, DEFAULT_UP_ADDRESS } from "../up/up.ts";
import { renderSummary } from "../up/summary.ts";
import { runningPid, stopAll, PROCESSES } from "../up/processes.ts";
import { genesis, hasMesh, meshPaths, readMeshFile } from "../../installer/genesis.ts";
import { InstallerError } from "../../installer/tls.ts";
import { ConfigError } from "../config.ts";

/**
 * `mesh up`, `mesh down`, `mesh status`: the embedded default (src/up). `up` leaves the bus, the
 * controller and one host agent running in the background (pids in `<dir>/run`, logs in
 * `<dir>/logs`); `down` stops them; `status` says what runs and, when it can, prints the summary.
 */

const DIR_OPTION = { flags: "--dir <folder>", description: "the mesh folder (default .mesh)" };

function dirOf(options: Readonly<Record<string, unknown>>): string {
  return typeof options.dir === "string" ? options.dir : ".mesh";
}

/** One line for the failures `up` expects (bad configuration, a refused step), exit 2. */
function failed(ctx: CliContext, error: unknown): number {
  if (error instanceof InstallerError || error instanceof UpError || error instanceof ConfigError) {
    ctx.err(`mesh: ${error.message.split("\n")[0]}`);
    return EXIT_USAGE;
  }
  throw error;
}

const upVerb: CliVerb = {
  path: ["up"],
  summary: "bring a whole mesh up on this machine (genesis, bus, controller, host, the example mesh, push --wait)",
  options: [
    DIR_OPTION,
    { flags: "--address <tls://host:port>", description: `the genesis address when the folder holds no mesh yet (default ${DEFAULT_UP_ADDRESS}, or a free port the OS picks when 4222 is taken; a taken --address fails)` },
    { flags: "--node <name>", description: "the local node's name (default: this machine's host name)" },
  ],
  async run(ctx, _args, options) {
    const dir = dirOf(options);
    try {
      const result = await up({
        dir,
        log: (line) => { if (!ctx.globals.json) ctx.err(line); },
        launcher: detachedLauncher(ctx.io.env),
        ...(typeof options.address === "string" ? { brokerAddress: options.address, addressSource: "--address" } : {}),
        ...(typeof options.node === "string" ? { node: options.node } : {}),
      });
      if (ctx.globals.json) ctx.out(JSON.stringify({ ok: true, node: result.node, summary: result.summary, push: result.push }, null, 2));
      else {
        for (const line of renderSummary(result.summary)) ctx.out(line);
        ctx.out("");
        ctx.out(`the operator's credential is ${result.paths.operatorCredential}; \`mesh down --dir ${dir}\` stops the mesh`);
      }
      return EXIT_OK;
    } catch (error) {
      return failed(ctx, error);
    }
  },
};

const downVerb: CliVerb = {
  path: ["down"],
  summary: "stop what `mesh up` started (the records stay: `mesh up` resumes them)",
  options: [DIR_OPTION],
  async run(ctx, _args, options) {
    const dir = meshPaths(dirOf(options)).dir;
    const stopped = await stopAll(dir);
    if (ctx.globals.json) ctx.out(JSON.stringify({ ok: true, stopped }));
    else ctx.out(stopped.length === 0 ? `nothing of ${dir} was running` : `stopped ${stopped.join(", ")} of ${dir}`);
    return EXIT_OK;
  },
};

const statusVerb: CliVerb = {
  path: ["status"],
  summary: "what of the local mesh runs, and its summary when the controller answers",
  options: [DIR_OPTION],
  async run(ctx, _args, options) {
    const paths = meshPaths(dirOf(options));
    if (!hasMesh(paths.dir)) {
      ctx.err(`mesh: no mesh in ${paths.dir}: run \`mesh up\``);
      return EXIT_USAGE;
    }
    const processes = Object.fromEntries(PROCESSES.map((name) => [name, runningPid(paths.dir, name)]));
    if (processes.bus === null || processes.controller === null) {
      const mesh = readMeshFile(paths.dir);
      if (ctx.globals.json) ctx.out(JSON.stringify({ ok: true, mesh, processes }));
      else ctx.out(`mesh at ${mesh.genesisAddress}: ${PROCESSES.map((n) => `${n} ${processes[n] === null ? "stopped" : `pid ${processes[n]}`}`).join(", ")} (\`mesh up\` starts it)`);
      return EXIT_OK;
    }
    const nc = await operatorConnection(paths);
    try {
      const summary = await readSummary(paths, nc, ctx.globals.timeoutMs);
      if (ctx.globals.json) ctx.out(JSON.stringify({ ok: true, summary }, null, 2));
      else for (const line of renderSummary(summary)) ctx.out(line);
      return EXIT_OK;
    } finally {
      await nc.close().catch(() => undefined);
    }
  },
};

const genesisVerb: CliVerb = {
  path: ["genesis"],
  summary: "create a new mesh in a folder: keys, bus certificate and configuration, first user list, credentials (R13)",
  options: [
    DIR_OPTION,
    { flags: "--address <tls://host:port>", description: "MESH_BROKER_ADDRESS: the broker's public endpoint (R8: port 4222 when absent)", required: true },
    { flags: "--name <names>", description: "more names for the bus certificate, comma separated (overlay names)" },
    { flags: "--operator <name>", description: "the first operator's name (default admin)" },
    { flags: "--node <name>", description: "the genesis node (R56): enrolled at genesis and carried in the first user list; its enrol reply goes to <dir>/<name>.enrol.json" },
    { flags: "--node-state <dir>", description: "the genesis node's state folder, where `mesh host init` wrote node.pub (with --node)" },
    { flags: "--systemd", description: "leave the bus stopped and write systemd units: <dir>/mesh-bus.service, mesh-controller.service, and mesh-host.service with --node" },
    { flags: "--force", description: "replace the mesh in the folder (its records are lost)" },
  ],
  async run(ctx, _args, options) {
    const node = typeof options.node === "string" ? options.node : undefined;
    const nodeState = typeof options.nodeState === "string" ? options.nodeState : undefined;
    if ((node === undefined) !== (nodeState === undefined)) {
      throw new UsageError(node === undefined ? "--node-state needs --node <name>" : "--node needs --node-state <dir> (where `mesh host init` wrote node.pub)");
    }
    try {
      const made = await genesis({
        dir: dirOf(options),
        brokerAddress: String(options.address),
        addressSource: "--address",
        log: (line) => ctx.err(line),
        force: options.force === true,
        systemd: options.systemd === true,
        ...(typeof options.name === "string" ? { extraNames: options.name.split(",").map((n) => n.trim()).filter(Boolean) } : {}),
        ...(typeof options.operator === "string" ? { operator: options.operator } : {}),
        ...(node !== undefined && nodeState !== undefined ? { node: { name: node, stateDir: nodeState } } : {}),
      });
      ctx.out(`mesh created in ${made.paths.dir}: controller settings in ${made.paths.controllerEnv}, operator credential in ${made.paths.operatorCredential}`);
      if (made.enrolReply) ctx.out(`genesis node ${node} enrolled: open its credential with \`mesh host credential --state ${nodeState} --from ${made.enrolReply}\``);
      for (const file of made.unitFiles ?? []) ctx.out(`systemd unit: ${file}`);
      return EXIT_OK;
    } catch (error) {
      return failed(ctx, error);
    }
  },
};

/** The verbs of the embedded default, registered in src/cli/verbs.ts. */
export const UP_VERBS: readonly CliVerb[] = [genesisVerb, upVerb, downVerb, statusVerb];
