/**
 * `npm run bench -- compose [--json] [--sizes 1000,10000] [--shared]`: composition at scale (issue 4).
 *
 * A generated mesh of N nodes with 5 modules each (one shared node-scoped packet filter and four
 * modules of the node's own, each issued, using mesh-build, following its `built` and offering a
 * tool: 5N bus users), plus the example's roles, folded with `evolve`. `--shared` puts the same five
 * modules on every node instead (N + 10 users). Measured: the time to compose the user
 * list and every declaration (composeDeclarations, digests by sha256 as the shell passes them),
 * median of 3 runs; the heap grown during one composition (an upper bound of its peak) and the
 * process's peak RSS. Goals: time(10,000) < 2 s; time(10,000) / time(1,000) ≤ 12 (linear, not
 * quadratic); bcrypt never runs while composing (its functions are counted).
 */
import { availableParallelism, loadavg } from "node:os";
import bcrypt from "bcryptjs";
import { composeDeclarations, renderUserList } from "../../src/compose/index.ts";
import { everyModule, evolve, initialState, type SequencedCommit, type State } from "../../src/projections/index.ts";
import type { MeshEvent } from "../../src/events/index.ts";
import { Manifest } from "../../src/manifest/manifest.ts";
import { sha256 } from "../../src/push/composition.ts";
import { BROKER_SEAT, BUILD_SEAT, CONTROLLER_NAME, busUser, type PrincipalKind } from "../../src/names.ts";
import { option } from "./args.ts";

const MODULES_PER_NODE = 5;
const FINGERPRINT = Array.from({ length: 32 }, () => "AB").join(":");
const AT = "2026-01-01T00:00:00.000Z";
const ADDRESS = "tls://bus.example.net:4222";
const config = { controllerSubmits: [BUILD_SEAT] };

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/** A distinct, well-formed nkey user public key (`U` and 55 base32 characters) for the n-th principal. */
function fakeNkey(n: number): string {
  let tail = "";
  for (let rest = n; rest > 0; rest = Math.floor(rest / 32)) tail = BASE32[rest % 32]! + tail;
  return `U${tail.padStart(55, "A")}`;
}

/**
 * Folds a generated mesh of `nodes` nodes (see the module comment) with `evolve`. Every principal
 * has an nkey credential, so the user list holds all of them (5 x nodes + 5 with --shared off).
 */
export function generate(nodes: number, shared = false): State {
  const commits: SequencedCommit[] = [];
  const commit = (kind: string, id: string, events: Array<Record<string, unknown>>) => {
    const commandId = `c${commits.length + 1}`;
    commits.push({
      sequence: commits.length + 1,
      commit: { commandId, entity: { kind, id }, events: events.map((e) => ({ actor: "bench", commandId, at: AT, ...e })) as unknown as MeshEvent[] },
    });
  };
  let n = 0;
  // Every principal is an nkey user (R63): a distinct public key each, as the records hold it; a
  // node's seed never leaves it (R64), so only the others carry a sealed seed.
  const credential = (kind: PrincipalKind, name: string) => {
    const user = busUser(kind, name);
    n += 1;
    return { type: "CredentialMinted", principal: { kind, name }, user, nkey: fakeNkey(n), ...(kind === "node" ? {} : { sealed: `sealed-${user}` }), address: ADDRESS };
  };
  const register = (manifest: unknown) => commit("module", (manifest as { name: string }).name, [{ type: "ModuleRegistered", manifest: Manifest.parse(manifest) }]);
  commit("mesh", "mesh", [{ type: "MeshCreated", genesisAddress: ADDRESS, fingerprint: FINGERPRINT, bootstrapUser: busUser("controller", CONTROLLER_NAME) }]);
  commit("controller", CONTROLLER_NAME, [credential("controller", CONTROLLER_NAME)]);
  commit("operator", "ada", [credential("operator", "ada")]);
  register({ name: CONTROLLER_NAME, version: "1", seats: { "the-controller": { protocol: "mesh-command/1" } }, claims: ["the-controller"] });
  register({ name: "broker", version: "1", seats: { [BROKER_SEAT]: { protocol: "nats" } }, claims: [BROKER_SEAT] });
  register({ name: "build-machine", version: "1", seats: { [BUILD_SEAT]: { protocol: "b", accepts: ["build"], emits: ["built"] } }, claims: [BUILD_SEAT] });
  register({ name: "packet-filter", version: "1", seats: { "packet-filter": { protocol: "", scope: "node" } }, claims: ["packet-filter"] });
  for (const m of ["broker", "build-machine", "packet-filter"]) commit("module", m, [{ type: "ModuleIssued", module: m }, credential("module", m)]);
  const app = Manifest.parse({ name: "app", version: "1", run: { image: "app:1" }, uses: [BUILD_SEAT], follows: [{ seat: BUILD_SEAT, event: "built" }], tools: [{ name: "status" }] });
  if (shared) {
    for (let k = 1; k < MODULES_PER_NODE; k++) {
      const module = `app-${k}`;
      commit("module", module, [{ type: "ModuleRegistered", manifest: { ...app, name: module } }]);
      commit("module", module, [{ type: "ModuleIssued", module }, credential("module", module)]);
    }
  }
  for (let i = 0; i < nodes; i++) {
    const node = `n${i}`;
    commit("node", node, [{ type: "NodeEnrolled", node, publicKey: `pk-${node}` }, credential("node", node)]);
    commit("node", node, [{ type: "OverlayPlaced", node, hub: i === 0, overlayName: `${node}.internal` }]);
    commit("module", "packet-filter", [{ type: "ModuleAssigned", module: "packet-filter", node }]);
    for (let k = 1; k < MODULES_PER_NODE; k++) {
      if (shared) {
        commit("module", `app-${k}`, [{ type: "ModuleAssigned", module: `app-${k}`, node }]);
        continue;
      }
      const module = `app-${i}-${k}`;
      commit("module", module, [{ type: "ModuleRegistered", manifest: { ...app, name: module } }]);
      commit("module", module, [{ type: "ModuleIssued", module }, credential("module", module), { type: "ModuleAssigned", module, node }]);
    }
  }
  commit("module", "broker", [{ type: "ModuleAssigned", module: "broker", node: "n0" }]);
  commit("module", "build-machine", [{ type: "ModuleAssigned", module: "build-machine", node: "n1" }]);
  return evolve(initialState, commits);
}

/** Counts every bcrypt call made while `body` runs (composition must make none). */
function countBcrypt<T>(body: () => T): { result: T; calls: number } {
  const target = bcrypt as unknown as Record<string, unknown>;
  const names = ["hash", "hashSync", "compare", "compareSync", "genSalt", "genSaltSync"];
  const saved = new Map<string, unknown>();
  let calls = 0;
  for (const name of names) {
    const original = target[name];
    if (typeof original !== "function") continue;
    saved.set(name, original);
    target[name] = (...args: unknown[]) => { calls += 1; return (original as (...a: unknown[]) => unknown)(...args); };
  }
  try {
    return { result: body(), calls };
  } finally {
    for (const [name, original] of saved) target[name] = original;
  }
}

export type Row = {
  nodes: number; modules: number; users: number; declarations: number; refused: number;
  composeMs: number; cpuMs: number; runsMs: number[]; heapGrowthMiB: number; userListMiB: number; bcryptCalls: number; foldMs: number;
};

/** Folds a generated mesh of `nodes` nodes and composes it 3 times (see the module comment). */
export function measure(nodes: number, shared: boolean): Row {
  const t0 = performance.now();
  const state = generate(nodes, shared);
  const foldMs = performance.now() - t0;
  const runsMs: number[] = [];
  const cpuRuns: number[] = [];
  let heapGrowth = 0;
  let bcryptCalls = 0;
  let last: ReturnType<typeof composeDeclarations> | undefined;
  for (let run = 0; run < 3; run++) {
    last = undefined;
    (globalThis as { gc?: () => void }).gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    const start = performance.now();
    const cpuStart = process.cpuUsage();
    const { result, calls } = countBcrypt(() => composeDeclarations(state, config, sha256));
    runsMs.push(performance.now() - start);
    const cpu = process.cpuUsage(cpuStart);
    cpuRuns.push((cpu.user + cpu.system) / 1000);
    heapGrowth = Math.max(heapGrowth, process.memoryUsage().heapUsed - heapBefore);
    bcryptCalls += calls;
    last = result;
  }
  const sorted = [...runsMs].sort((a, b) => a - b);
  const users = last!.users;
  // A composition that left its principals out measures nothing of permissions or the list.
  const refused = last!.declarations.filter((d) => !d.ok).length;
  if (!users.ok || users.leftOut.length > 0 || refused > 0) {
    throw new Error(`compose bench: the generated mesh did not compose whole (${users.ok ? users.users.length : 0} users, ${users.leftOut.length} left out, ${refused} declarations refused)`);
  }
  return {
    nodes,
    modules: everyModule(state.modules).length,
    users: users.ok ? users.users.length : 0,
    declarations: last!.declarations.filter((d) => d.ok).length,
    refused: last!.declarations.filter((d) => !d.ok).length,
    composeMs: sorted[1]!,
    cpuMs: [...cpuRuns].sort((a, b) => a - b)[1]!,
    runsMs: runsMs.map((ms) => Math.round(ms)),
    heapGrowthMiB: heapGrowth / 2 ** 20,
    userListMiB: users.ok ? Buffer.byteLength(renderUserList(users)) / 2 ** 20 : 0,
    bcryptCalls,
    foldMs,
  };
}

/** Runs the bench; prints a table, or JSON with `--json`. Exits non-zero when a goal is missed. */
export async function run(args: string[]): Promise<void> {
  const json = args.includes("--json");
  const sizesArg = option(args, "--sizes");
  const sizes = sizesArg ? sizesArg.split(",").map(Number) : [1_000, 10_000];
  const shared = args.includes("--shared");
  const rows = sizes.map((n) => measure(n, shared));
  const small = rows.find((r) => r.nodes === 1_000);
  const large = rows.find((r) => r.nodes === 10_000);
  const ratio = small && large ? large.composeMs / small.composeMs : null;
  const cpuRatio = small && large ? large.cpuMs / small.cpuMs : null;
  const goals = {
    tenThousandUnder2s: large ? large.composeMs < 2_000 : null,
    ratioAtMost12: ratio === null ? null : ratio <= 12,
    bcryptNeverRan: rows.every((r) => r.bcryptCalls === 0),
  };
  const peakRssMiB = process.resourceUsage().maxRSS / 1024;
  if (json) {
    console.log(JSON.stringify({ bench: "compose", modulesPerNode: MODULES_PER_NODE, shared, rows, ratio, cpuRatio, loadAverage: loadavg(), peakRssMiB, goals }, null, 2));
  } else {
    console.log(`compose: user list + every declaration, ${MODULES_PER_NODE} modules per node, ${shared ? "the same 5 modules on every node" : "4 of each node's own + 1 shared"} (median of 3 runs)`);
    console.log("nodes   modules  users   decl.   compose ms  cpu ms  runs ms             heap grown MiB  user list MiB  bcrypt  fold ms");
    for (const r of rows) {
      console.log([
        String(r.nodes).padEnd(7), String(r.modules).padEnd(8), String(r.users).padEnd(7), String(r.declarations).padEnd(7),
        r.composeMs.toFixed(0).padEnd(11), r.cpuMs.toFixed(0).padEnd(7), r.runsMs.join("/").padEnd(19), r.heapGrowthMiB.toFixed(1).padEnd(15),
        r.userListMiB.toFixed(2).padEnd(14), String(r.bcryptCalls).padEnd(7), r.foldMs.toFixed(0),
      ].join(" "));
    }
    if (ratio !== null) console.log(`time(10,000) / time(1,000) = ${ratio.toFixed(2)} wall, ${cpuRatio!.toFixed(2)} cpu (goal ≤ 12)`);
    console.log(`load average while measuring: ${loadavg().map((l) => l.toFixed(1)).join(" ")} on ${availableParallelism()} cpus`);
    if (large) console.log(`10,000 nodes composed in ${large.composeMs.toFixed(0)} ms (goal < 2000 ms)`);
    console.log(`bcrypt calls while composing: ${rows.reduce((s, r) => s + r.bcryptCalls, 0)} (goal 0); process peak RSS ${peakRssMiB.toFixed(0)} MiB`);
  }
  if (Object.values(goals).some((g) => g === false)) process.exitCode = 1;
}
