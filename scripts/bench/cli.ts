/**
 * `npm run bench -- cli [--runs 10] [--json]` (in the table: `--only cli`): what a person waits
 * for at the `mesh` command line (issue 29), each call a fresh process of the built launcher
 * (bin/mesh.js over dist/, built first by scripts/build.mjs, as `prepare` builds it):
 *
 * - `mesh --version` against `node -e 0`, the floor of any Node tool;
 * - `mesh nodes` on a one-node mesh against a bare nats.js client that dials the same bus with the
 *   same credential (nkey seed, TLS trusting the bus's certificate) and makes one request;
 * - `mesh up` of a new mesh in a temporary folder, to its summary (genesis, the bus, the controller
 *   and the host it starts, the example mesh, the push).
 *
 * The pairs alternate run by run, so the shared machine's drift hits both. The ratios are of CPU
 * time (the children's user+system, from /proc/self/stat), what a start costs whatever else the
 * machine runs; the median wall times are printed beside them.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../installer/serverConfig.ts";
import { readBusCredential } from "../../src/files/index.ts";
import { commandSubject, inboxPrefix } from "../../src/names.ts";
import { option } from "./args.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MESH = join(ROOT, "bin", "mesh.js");

/** One side of a pair: CPU milliseconds summed over its runs, and the median wall time of one run. */
export type Side = { cpuMs: number; wallMs: number; runs: number };
export type CliBench = {
  version: { mesh: Side; node: Side };
  nodes: { mesh: Side; bare: Side };
  up: { wallMs: number; cpuMs: number };
};

/** CPU milliseconds of this process's waited-for children so far (Linux: cutime + cstime, in ticks of 10 ms). */
function childrenCpuMs(): number {
  const fields = readFileSync("/proc/self/stat", "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** Runs `node args` to its end; returns its wall and CPU milliseconds. Throws with its stderr when it fails. */
function timed(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): { wallMs: number; cpuMs: number; out: string } {
  const cpu = childrenCpuMs();
  const started = performance.now();
  const run = spawnSync(process.execPath, args, { cwd, env, encoding: "utf8", maxBuffer: 16 * 2 ** 20 });
  const wallMs = performance.now() - started;
  if (run.status !== 0) throw new Error(`node ${args.join(" ")} exited ${run.status}: ${run.stderr.trim().split("\n").at(-1) ?? ""}`);
  return { wallMs, cpuMs: childrenCpuMs() - cpu, out: run.stdout };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A command to time: node's arguments and the folder it runs in. */
type Command = { args: readonly string[]; cwd: string };

/** `runs` runs of each command, alternating (after one warm-up each); CPU summed, wall the median. */
function pair(runs: number, a: Command, b: Command): [Side, Side] {
  const sides = [a, b].map((command) => {
    timed(command.args, command.cwd);
    return { command, cpu: 0, walls: [] as number[] };
  });
  for (let i = 0; i < runs; i += 1) {
    for (const side of sides) {
      const one = timed(side.command.args, side.command.cwd);
      side.cpu += one.cpuMs;
      side.walls.push(one.wallMs);
    }
  }
  const [x, y] = sides.map((side): Side => ({ cpuMs: side.cpu, wallMs: median(side.walls), runs }));
  return [x!, y!];
}

/**
 * The bare client: one ESM program for `node --input-type=module -e`, argv: server, the bus's
 * certificate file, the credential file, its inbox prefix, the subject. Dials with the seed and
 * TLS trusting exactly that certificate, makes one request, closes.
 */
const BARE_CLIENT = `
import { readFileSync } from "node:fs";
import { connect, nkeyAuthenticator } from "@nats-io/transport-node";
const [server, certificate, credentialFile, inbox, subject] = process.argv.slice(1);
const credential = JSON.parse(readFileSync(credentialFile, "utf8"));
const nc = await connect({
  servers: server, inboxPrefix: inbox, reconnect: false,
  authenticator: nkeyAuthenticator(new TextEncoder().encode(credential.seed)),
  tls: { ca: readFileSync(certificate, "utf8"), checkServerIdentity: () => undefined },
});
const reply = await nc.request(subject, "{}", { timeout: 10000 });
if (!reply.json().ok) throw new Error("refused");
await nc.close();
`;

/** Measures the three rows (module comment) with `runs` runs per side; `log` says each step. */
export async function measureCli(runs: number, log: (line: string) => void): Promise<CliBench> {
  log("cli: building dist/ (scripts/build.mjs)");
  timed([join(ROOT, "scripts", "build.mjs")], ROOT);
  const root = mkdtempSync(join(tmpdir(), "mesh-bench-cli-"));
  const dir = join(root, "mesh");
  try {
    log("cli: mesh --version / node -e 0");
    const [meshVersion, node] = pair(runs, { args: [MESH, "--version"], cwd: root }, { args: ["-e", "0"], cwd: root });

    log("cli: mesh up of a new mesh");
    const port = await freePort();
    // Its context goes to the bench's own configuration folder, not the user's (src/cli/contexts.ts).
    const up = timed([MESH, "up", "--dir", dir, "--address", `tls://127.0.0.1:${port}`, "--node", "bench"], root, { ...process.env, XDG_CONFIG_HOME: join(root, "config") });

    log("cli: mesh nodes / a bare nats.js client's one request");
    const credentialFile = join(dir, "operator.json");
    const credential = readBusCredential(credentialFile);
    const bare = ["--input-type=module", "-e", BARE_CLIENT, `127.0.0.1:${port}`, join(dir, "bus-cert.pem"), credentialFile, inboxPrefix(credential.user), commandSubject(credential.user, "nodes")];
    // The bare client resolves @nats-io/transport-node from its working folder: the repository.
    const [meshNodes, bareNodes] = pair(runs, { args: [MESH, "nodes", "--credential", credentialFile], cwd: root }, { args: bare, cwd: ROOT });
    return { version: { mesh: meshVersion, node }, nodes: { mesh: meshNodes, bare: bareNodes }, up: { wallMs: up.wallMs, cpuMs: up.cpuMs } };
  } finally {
    spawnSync(process.execPath, [MESH, "down", "--dir", dir], { stdio: "ignore" });
    rmSync(root, { recursive: true, force: true });
  }
}

export async function run(args: string[]): Promise<void> {
  const result = await measureCli(Number(option(args, "--runs") ?? 10), (line) => console.error(line));
  console.log(JSON.stringify(result, null, 2));
}
