import { parseEnvFile } from "../../src/files/envFile.ts";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  containerRuntime, exitsInARow, planRuns, restartDelay, runWish, specChange, specChanged, tailOf,
  DEFAULT_GRACE_SECONDS, RESTART_INITIAL_MS, RESTART_MAX_MS, RESTART_RESET_AFTER_MS, type RunFacts, type RunSpec,
} from "../../src/host/runPlan.ts";
import { Manifest } from "../../src/manifest/manifest.ts";
import type { DeclaredModule } from "../../src/contracts/declaration.ts";
import { envFileText } from "../../src/files/envFile.ts";
import { newUserKey } from "../../src/crypto/secrets.ts";

/** The runner's decisions without a process: what to run, start, stop, restart, and when (R72). */

const facts: RunFacts = { dir: "/state/modules/echo", envText: "MESH_USER='module-echo'\nMESH_WORK='[\"a=b\"]'\n", envDigest: "d1", runtime: null };
const entry = (run: DeclaredModule["run"], module = "echo"): DeclaredModule =>
  ({ module, version: "1", run, credential: { address: "tls://x:1", user: "u", sealed: "s", fingerprint: "" }, env: {} as DeclaredModule["env"], provisions: [] });
const spec = (module: string, envDigest = "d1", argv = ["node", "main.js"]): RunSpec => ({ module, version: "1", argv, dir: `/m/${module}`, graceMs: 10_000, env: {}, envDigest });

describe("R72: the runner's plan", () => {
  it("R72: a run.command runs as argv in the module's folder with its env file's variables and the default grace", () => {
    const wish = runWish(entry({ command: ["node", "main.js", "--a b"] }), facts);
    assert.equal(wish.kind, "run");
    if (wish.kind !== "run") return;
    assert.deepEqual(wish.spec.argv, ["node", "main.js", "--a b"]);
    assert.equal(wish.spec.dir, facts.dir);
    assert.equal(wish.spec.graceMs, DEFAULT_GRACE_SECONDS * 1000);
    assert.deepEqual(wish.spec.env, { MESH_USER: "module-echo", MESH_WORK: "[\"a=b\"]" });
  });

  it("R73: the key a module starts with is read from its env file as the agent writes it (quoted values)", () => {
    const key = newUserKey();
    const envText = envFileText({ MESH_NKEY_SEED: key.seed, MESH_USER: "module-echo" });
    const wish = runWish(entry({ command: ["x"] }), { ...facts, envText });
    assert.equal(wish.kind === "run" && wish.spec.nkey, key.publicKey);
    const unquoted = runWish(entry({ command: ["x"] }), { ...facts, envText: `MESH_NKEY_SEED=${key.seed}\n` });
    assert.equal(unquoted.kind === "run" && unquoted.spec.nkey, key.publicKey, "an older unquoted line reads as written");
    const none = runWish(entry({ command: ["x"] }), { ...facts, envText: "MESH_NKEY_SEED='not-a-seed'\n" });
    assert.equal(none.kind === "run" && none.spec.nkey, undefined, "no key said rather than a wrong one");
  });

  // Found by an attacker's trial: `"--privileged"` as an image became a flag of `docker run`.
  it("R72: an image that would read as a flag, or holds a space, is refused by the manifest and never run from older records", () => {
    for (const image of ["--privileged", "-v/:/host", "nginx --privileged", ""]) {
      const parsed = Manifest.safeParse({ name: "echo", version: "1", run: { image } });
      assert.equal(parsed.success, false, image);
      assert.match(JSON.stringify(parsed.error?.issues), /image reference/, image);
      const wish = runWish(entry({ image }), { ...facts, runtime: "podman" });
      if (image !== "") assert.deepEqual([wish.kind, wish.kind === "skip" && wish.notRun.state], ["skip", "not-run"], image);
    }
    assert.ok(Manifest.safeParse({ name: "echo", version: "1", run: { image: "docker.io/library/nginx:1.27" } }).success);
  });

  it("R72: run.grace sets the seconds before SIGKILL", () => {
    const wish = runWish(entry({ command: ["x"], grace: 2 }), facts);
    assert.equal(wish.kind === "run" && wish.spec.graceMs, 2000);
  });

  it("R72: a module run by the mesh, or with no run, is not run by the agent, and says why", () => {
    const byMesh = runWish(entry({ command: ["mesh", "up"], by: "mesh" }), facts);
    assert.equal(byMesh.kind === "skip" && byMesh.notRun.state, "not-run");
    const none = runWish(entry({}), facts);
    assert.equal(none.kind === "skip" && none.notRun.state, "not-run");
  });

  it("R72: run.image runs through the runtime found, else runtime-missing", () => {
    const missing = runWish(entry({ image: "nats:2" }), facts);
    assert.equal(missing.kind === "skip" && missing.notRun.state, "runtime-missing");
    const docker = runWish(entry({ image: "nats:2" }), { ...facts, runtime: "docker" });
    assert.equal(docker.kind, "run");
    if (docker.kind !== "run") return;
    assert.equal(docker.spec.argv[0], "docker");
    assert.equal(docker.spec.argv.at(-1), "nats:2");
    assert.ok(docker.spec.argv.includes(`${facts.dir}/env`));
  });

  it("R72: podman is preferred to docker, and none found is null", () => {
    assert.equal(containerRuntime((p) => p === "docker" || p === "podman"), "podman");
    assert.equal(containerRuntime((p) => p === "docker"), "docker");
    assert.equal(containerRuntime(() => false), null);
  });

  it("R72: a new module starts, an unassigned one stops, one whose env changed restarts, the rest keep running", () => {
    const running = new Map([["a", spec("a")], ["b", spec("b")], ["c", spec("c")]]);
    const wanted = new Map([["b", spec("b", "d2")], ["c", spec("c")], ["d", spec("d")]]);
    const plan = planRuns(running, wanted);
    assert.deepEqual(plan.stop, ["a"]);
    assert.deepEqual(plan.start.map((s) => s.module), ["d"]);
    assert.deepEqual(plan.restart.map((s) => s.module), ["b"]);
    assert.deepEqual(plan.unchanged, ["c"]);
  });

  it("R72: a changed command, grace or version is a change; the same spec is not", () => {
    assert.equal(specChanged(spec("a"), spec("a")), false);
    // A new version with the same command: its code changed on disk (found by a new-user trial).
    assert.equal(specChanged(spec("a"), { ...spec("a"), version: "2" }), true);
    assert.equal(specChanged(spec("a"), spec("a", "d1", ["node", "other.js"])), true);
    assert.equal(specChanged(spec("a"), { ...spec("a"), graceMs: 1 }), true);
  });

  // Found by a new-user trial: a version bump's restart said only "its run or environment changed".
  it("R72: a restart says what changed, the versions too", () => {
    assert.equal(specChange(spec("a"), { ...spec("a"), version: "2" }), "its version changed (1 → 2)");
    assert.equal(specChange(spec("a"), spec("a", "d2")), "its environment changed");
    assert.equal(specChange(spec("a"), spec("a", "d1", ["node", "other.js"])), "its command changed");
    assert.equal(specChange(spec("a"), { ...spec("a"), graceMs: 1 }), "its grace changed");
    assert.equal(specChange(spec("a"), spec("a")), undefined);
  });

  it("R72: the restart pause doubles per exit in a row up to the cap, with jitter between half and all of it", () => {
    assert.equal(restartDelay(1, 1), RESTART_INITIAL_MS);
    assert.equal(restartDelay(1, 0), RESTART_INITIAL_MS / 2);
    assert.equal(restartDelay(2, 1), RESTART_INITIAL_MS * 2);
    assert.equal(restartDelay(50, 1), RESTART_MAX_MS);
    for (let n = 1; n < 30; n++) {
      const d = restartDelay(n, 0.37);
      assert.ok(d > 0 && d <= RESTART_MAX_MS, `attempt ${n}: ${d}`);
    }
  });

  it("R72: a module that ran a while starts its back-off over", () => {
    assert.equal(exitsInARow(5, RESTART_RESET_AFTER_MS), 1);
    assert.equal(exitsInARow(5, 10), 6);
  });

  it("R72: the env file's lines parse back to its variables, values kept whole", () => {
    assert.deepEqual(parseEnvFile("A=1\nB=x=y\n\n"), { A: "1", B: "x=y" });
    assert.deepEqual(parseEnvFile("A='[{\"a\": 1}]'\nB='x y'\n"), { A: '[{"a": 1}]', B: "x y" }, "the quoted form the host writes");
  });

  it("R72: a log tail keeps the newest lines and at most the bytes asked", () => {
    assert.deepEqual(tailOf("a\nb\nc\n", 2, 100), { text: "b\nc\n", truncated: true });
    assert.deepEqual(tailOf("a\nb\n", 5, 100), { text: "a\nb\n", truncated: false });
    const big = tailOf("x".repeat(1000), 10, 100);
    assert.equal(big.text.length, 100);
    assert.equal(big.truncated, true);
  });

  it("R72: the bus and the controller say they are run by the mesh, never by an agent", () => {
    for (const file of ["../../module.json", "../../examples/broker.json"]) {
      const manifest = Manifest.parse(JSON.parse(readFileSync(new URL(file, import.meta.url), "utf8")));
      assert.equal(manifest.run.by, "mesh", file);
    }
  });

  it("R72: a manifest's run refuses an empty command and an unknown runner", () => {
    const base = { name: "m", version: "1" };
    assert.equal(Manifest.safeParse({ ...base, run: { command: [] } }).success, false);
    assert.equal(Manifest.safeParse({ ...base, run: { command: ["x"], by: "agent" } }).success, false);
    assert.equal(Manifest.safeParse({ ...base, run: { command: ["x"], grace: -1 } }).success, false);
  });
});
