/**
 * `mesh host ...`: the node side (DESIGN.md section 7).
 *
 * - `mesh host init --state <dir> [--force]`: makes the node's key pairs (X25519 and nkey, R64) and
 *   prints the public keys for `mesh node enrol <name> --key <public key> --nkey <nkey>`;
 * - `mesh host rotate-key --state <dir> [--force]`: makes a pending nkey pair and prints its public
 *   key for `mesh credential rotate node <name> --nkey <nkey>` (R50);
 * - `mesh host credential --state <dir> --from <file>`: joins the enrol reply (no secret in it)
 *   with the node's own seed and keeps the credential in `<dir>/credential.json` (0600);
 * - `mesh host --state <dir> --node <name> [--credential <file>] [--bus-include ... --bus-config
 *   ... --bus-pid ... --bus-monitor ...] [--once]`: runs the host agent until SIGINT or SIGTERM.
 */
import { printData } from "./output.ts";
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { nameProblem } from "../names.ts";
import { EXIT_OK, EXIT_REFUSED, UsageError, type CliContext } from "./context.ts";
import type { CliVerb } from "./busVerb.ts";
import { METRICS_OPTION, metricsListenOf, serveMetricsAt } from "./metricsFlag.ts";
import { MAX_JSON_DEPTH, jsonDepthOver } from "../commands/validation.ts";
import type { BusReloadOptions } from "../host/index.ts";
import type { HostReport } from "../contracts/report.ts";

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

function required(options: Readonly<Record<string, unknown>>, key: string, flag: string): string {
  const value = text(options[key]);
  if (value === undefined) throw new UsageError(`${flag} is required`);
  return value;
}

/**
 * The host agent's module, loaded by the action that needs it: every other verb of `mesh` starts
 * without it (and without JetStream), each module read at a start costing time under tsx.
 */
const hostModule = () => import("../host/index.ts");

/** Runs `body`, turning a HostStateError into a UsageError (exit 2, one line, never a secret). */
async function hostState<T>(body: (host: Awaited<ReturnType<typeof hostModule>>) => T): Promise<T> {
  const host = await hostModule();
  try {
    return body(host);
  } catch (error) {
    if (error instanceof host.HostStateError) throw new UsageError(error.message);
    throw error;
  }
}

/** The four `--bus-*` options together, or none (a node that does not hold mesh-broker). */
function busOptions(options: Readonly<Record<string, unknown>>): BusReloadOptions | undefined {
  const given = {
    includeFile: text(options.busInclude),
    configFile: text(options.busConfig),
    pid: text(options.busPid),
    monitorUrl: text(options.busMonitor),
  };
  const missing = Object.entries({ "--bus-include": given.includeFile, "--bus-config": given.configFile, "--bus-pid": given.pid, "--bus-monitor": given.monitorUrl })
    .filter(([, value]) => value === undefined)
    .map(([flag]) => flag);
  if (missing.length === 4) return undefined;
  if (missing.length > 0) throw new UsageError(`the node holding mesh-broker needs all four --bus-* options: missing ${missing.join(", ")}`);
  if (!/^https?:\/\/[^/@\s]+\/?$/.test(given.monitorUrl!)) throw new UsageError("--bus-monitor is the bus's monitoring endpoint, http://host:port");
  return {
    includeFile: given.includeFile!,
    configFile: given.configFile!,
    pid: given.pid!,
    monitorUrl: given.monitorUrl!,
    ...(text(options.natsServer) ? { natsServer: text(options.natsServer)! } : {}),
  };
}

type Run = (ctx: CliContext, options: Readonly<Record<string, unknown>>) => Promise<number>;

/** `mesh host`: runs the agent until SIGINT or SIGTERM (or the first declaration, with --once). */
const runAgent: Run = async (ctx, options) => {
    const stateDir = required(options, "state", "--state <dir>");
    const node = required(options, "node", "--node <name>");
    const problem = nameProblem(node);
    if (problem) throw new UsageError(`--node: ${problem}`);
    const given = text(options.credential);
    const { NODE_CREDENTIAL_FILE } = await hostModule();
    const credentialFile = given ?? join(stateDir, NODE_CREDENTIAL_FILE);
    if (!existsSync(credentialFile)) {
      throw new UsageError(`no credential at ${credentialFile}: run \`mesh host credential --state ${stateDir} --from <enrol reply>\` or pass --credential <file>`);
    }
    const bus = busOptions(options);
    // Checked once now (a clear error at start), then read again at every connection attempt.
    await hostState(({ readCredentialFile }) => readCredentialFile(credentialFile, stateDir));
    const once = options.once === true;
    const interval = text(options.checkInterval);
    const checkSeconds = interval === undefined ? 60 : Number(interval);
    if (!Number.isFinite(checkSeconds) || checkSeconds < 0) throw new UsageError(`--check-interval: "${interval}" is not a number of seconds (0 or more)`);
    const listen = metricsListenOf(options);
    const metrics = listen && (await import("../metrics/host.ts")).hostMetrics();
    const stopMetrics = listen && metrics ? await serveMetricsAt(metrics.registry, listen, (line) => ctx.err(line)) : undefined;
    let first: HostReport | undefined;
    let refused = false;
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => { finish = resolve; });
    const host = await hostState(({ readCredentialFile, startHost }) =>
      startHost({
        stateDir,
        node,
        credential: () => readCredentialFile(credentialFile, stateDir),
        ...(bus ? { bus } : {}),
        log: (line) => ctx.err(line),
        checkIntervalMs: Math.round(checkSeconds * 1000),
        ...(metrics ? { metrics } : {}),
        onReport: (report) => {
          metrics?.declarationReported(report);
          if (ctx.globals.json) ctx.out(JSON.stringify(report));
          if (once && first === undefined) { first = report; finish(); }
        },
        // With --once a refused credential ends the run (exit 1) instead of retrying forever.
        onRefused: () => { if (once && first === undefined) { refused = true; finish(); } },
      }),
    );
    const onSignal = () => finish();
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    try {
      await finished;
    } finally {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      await host.stop();
      await stopMetrics?.();
    }
    return refused || (first !== undefined && !first.ok) ? EXIT_REFUSED : EXIT_OK;
};

/**
 * `mesh host init`: the node's key pairs (R64); prints the X25519 public key on the first line and
 * the nkey public key on the second (stdout) for `mesh node enrol --key --nkey`; with `--json`,
 * `{ ok: true, publicKey, nkey, keyFile }` (a local verb's object: `ok`, no `v`, as `mesh down`).
 */
const init: Run = async (ctx, options) => {
    const stateDir = required(options, "state", "--state <dir>");
    const { publicKey, nkey, keyFile } = await hostState(({ initHostKeys }) => initHostKeys(stateDir, { force: options.force === true }));
    if (ctx.globals.json) {
      printData(ctx, { ok: true, publicKey, nkey, keyFile });
    } else {
      ctx.out(`${publicKey}\n${nkey}`);
      ctx.err(`private keys written under ${stateDir} (0600, they never leave this machine); enrol this node with: mesh node enrol <name> --key ${publicKey} --nkey ${nkey}`);
    }
    return EXIT_OK;
};

/**
 * `mesh host rotate-key`: a pending nkey pair for this node (R50, R64); prints its public key
 * (stdout) for `mesh credential rotate node <name> --nkey` (`--json`: `{ ok: true, nkey, file }`).
 * The running agent switches to it by itself once the mesh installs it.
 */
const rotateKey: Run = async (ctx, options) => {
    const stateDir = required(options, "state", "--state <dir>");
    const { nkey, file } = await hostState(({ rotateNodeKey }) => rotateNodeKey(stateDir, { force: options.force === true }));
    if (ctx.globals.json) {
      printData(ctx, { ok: true, nkey, file });
    } else {
      ctx.out(nkey);
      ctx.err(`pending seed written to ${file} (0600); record it with: mesh credential rotate node <name> --nkey ${nkey}`);
    }
    return EXIT_OK;
};

/** `mesh host credential`: joins the enrol reply with the node's own seed, keeps `<state>/credential.json` (`--json`: `{ ok: true, file, address, user }`). */
const credential: Run = async (ctx, options) => {
    const stateDir = required(options, "state", "--state <dir>");
    const from = required(options, "from", "--from <file>");
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(from, "utf8"));
    } catch {
      throw new UsageError(`${from} is not a JSON enrol reply or credential: save the reply as data, \`mesh node enrol <node> --key <key> --nkey <nkey> -o json > ${from}\``);
    }
    if (jsonDepthOver(value)) throw new UsageError(`${from} nests arrays or objects more than ${MAX_JSON_DEPTH} deep: it is not an enrol reply or credential`);
    const saved = await hostState(({ saveNodeCredential }) => saveNodeCredential(stateDir, value));
    if (ctx.globals.json) printData(ctx, { ok: true, ...saved });
    else ctx.out(`credential of ${saved.user} for ${saved.address} kept in ${saved.file}`);
    return EXIT_OK;
};

/**
 * `mesh host unit`: prints the systemd unit running this node's agent (R56), with the `--bus-*`
 * options when given (the node holding mesh-broker). Redirect it to a file and `systemctl link` it.
 */
const unit: Run = async (ctx, options) => {
  const stateDir = resolve(required(options, "state", "--state <dir>"));
  const node = required(options, "node", "--node <name>");
  const problem = nameProblem(node);
  if (problem) throw new UsageError(`--node: ${problem}`);
  const { hostUnit } = await import("../../installer/bus.ts");
  ctx.out(hostUnit(node, stateDir, busOptions(options)).trimEnd());
  return EXIT_OK;
};

const ACTIONS: Record<string, Run> = { init, "rotate-key": rotateKey, credential, unit };

/**
 * `mesh host [init|credential] --state <dir> ...`: one verb whose optional first word picks the
 * action (a commander parent would take `--state` away from its sub-commands).
 */
const host: CliVerb = {
  path: ["host"],
  examples: [["on the node: make its keys", "mesh host init --state /var/lib/mesh-host"], ["keep the credential the enrol printed", "mesh host credential --state /var/lib/mesh-host --from enrol.json"]],
  globals: ["json"],
  summary: "the node side: `host init` (key pairs), `host rotate-key` (a pending nkey), `host credential` (keep the enrol reply), `host unit` (print its systemd unit), `host` (run the agent)",
  arguments: [{ name: "action", description: "init | rotate-key | credential | unit (print its systemd unit); none runs the agent", optional: true }],
  options: [
    { flags: "--state <dir>", description: "the node's state folder (its key, credential and resources)" },
    { flags: "--node <name>", description: "agent: this node's mesh name" },
    { flags: "--credential <file>", description: "agent: the node's credential or enrol reply (default <state>/credential.json)" },
    { flags: "--bus-include <file>", description: "agent on the broker's holder: the include file receiving the user list" },
    { flags: "--bus-config <file>", description: "agent on the broker's holder: the bus's configuration (validated with nats-server -t)" },
    { flags: "--bus-pid <pid>", description: "agent on the broker's holder: the bus's pid or pid file (signalled to reload)" },
    { flags: "--bus-monitor <url>", description: "agent on the broker's holder: the bus's monitoring endpoint, http://host:port" },
    { flags: "--nats-server <path>", description: "agent: the nats-server binary used to validate (default: on the PATH)" },
    { flags: "--check-interval <seconds>", description: "agent: seconds between re-checks of the files it owns, drift written back and reported (default 60; 0: at start only)" },
    { ...METRICS_OPTION, description: `agent: ${METRICS_OPTION.description}` },
    { flags: "--once", description: "agent: exit after the first declaration: 0 applied, 1 not applied or the bus refused the credential" },
    { flags: "--force", description: "init: replace the existing keys (the node must then be enrolled again); rotate-key: replace a pending key" },
    { flags: "--from <file>", description: "credential: the enrol reply (`mesh node enrol --json` output) or a credential file" },
  ],
  async run(ctx, args, options) {
    const action = text(args[0]);
    if (action === undefined) return runAgent(ctx, options);
    const run = ACTIONS[action];
    if (!run) throw new UsageError(`host ${action}: unknown action (use init, rotate-key, credential, unit, or none to run the agent)`);
    return run(ctx, options);
  },
};

/** The host verbs, for CLI_VERBS. */
export const HOST_VERBS: CliVerb[] = [host];
