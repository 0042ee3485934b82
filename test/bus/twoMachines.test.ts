import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../installer/serverConfig.ts";
import { isAlive, stopPid } from "../../installer/bus.ts";
import { readUserList } from "../../installer/carried.ts";
import { BOOTSTRAP_SEED, BOOTSTRAP_USER } from "../../src/genesis.ts";
import { connectToBus } from "../../src/bus/connect.ts";
import { busUser } from "../../src/names.ts";

/**
 * docs/real-machines.md's "Genesis and a second node", run as written on one box (R56). Its ```sh
 * blocks are read from that page and run in order, each by bash -e in the home of the machine its
 * first line names, with the substitutions the page lists under "Run on one box" and no other.
 */

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const MACHINES: Record<string, string> = { "the genesis host": "genesis", "the second node": "node", "the operator's machine": "operator" };
const WALKTHROUGH = { page: "docs/real-machines.md", section: "## Genesis and a second node" };
const HOSTS: Record<string, string> = { "bus.example.net": "genesis", "web1.example.net": "node", "operator.example.net": "operator" };

/** The walkthrough section's blocks: which machine, and the commands. */
export function walkthroughBlocks(page: string): Array<{ machine: string; script: string }> {
  const start = page.indexOf(WALKTHROUGH.section);
  assert.ok(start >= 0, `${WALKTHROUGH.page} has the section ${WALKTHROUGH.section}`);
  const end = page.indexOf("\n## ", start + 1);
  const section = page.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => {
    const lines = m[1]!.split("\n");
    const machine = /^# on (.+)$/.exec(lines[0]!)?.[1];
    assert.ok(machine && MACHINES[machine], `a block names its machine on its first line: ${lines[0]}`);
    return { machine: MACHINES[machine]!, script: lines.slice(1).join("\n") };
  });
}

const FAKE_SYSTEMCTL = `#!/bin/bash
# Stand-in for systemctl (docs/real-machines.md: "Run on one box"): link a unit, start its ExecStart in the background
# with its EnvironmentFile, again 2 s after a failure (Restart=on-failure, RestartSec=2).
set -e
units="$MACHINE_ROOT/etc/systemd/system"; runs="$MACHINE_ROOT/run/fake-systemd"
mkdir -p "$units" "$runs"
verb="$1"; shift
case "$verb" in
  link) for f in "$@"; do ln -sf "$f" "$units/$(basename "$f")"; done ;;
  enable)
    for name in "$@"; do
      [ "$name" = "--now" ] && continue
      unit="$units/\${name%.service}.service"
      exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
      env_file=$(sed -n 's/^EnvironmentFile=//p' "$unit")
      setsid bash -c "while :; do if [ -n '$env_file' ]; then set -a; . '$env_file'; set +a; fi; $exec_start && exit 0; sleep 2; done" \\
        >> "$runs/\${name%.service}.log" 2>&1 < /dev/null &
      echo $! > "$runs/\${name%.service}.pid"
    done ;;
  *) echo "fake systemctl: $verb is not stood in for" >&2; exit 2 ;;
esac
`;

const FAKE_SCP = `#!/bin/bash
# Stand-in for scp (docs/real-machines.md: "Run on one box"): user@host:path is that machine's folder.
set -e
map() {
  case "$1" in
    *:*) host="\${1%%:*}"; host="\${host#*@}"; path="\${1#*:}"; machine="$(grep "^$host " "$BOX/hosts" | cut -d' ' -f2)"
      [ -n "$machine" ] || { echo "fake scp: unknown host $host" >&2; exit 2; }
      case "$path" in /var/lib/*) echo "$BOX/$machine$path" ;; /*) echo "$path" ;; *) echo "$BOX/$machine/home/$path" ;; esac ;;
    *) echo "$1" ;;
  esac
}
cp "$(map "$1")" "$(map "$2")"
`;

describe("two machines, by docs/real-machines.md (R56)", () => {
  let box: string;
  let port: number;
  const started: number[] = [];
  const logs: string[] = [];

  before(async () => {
    box = mkdtempSync(join(tmpdir(), "mesh-two-machines-"));
    port = await freePort("127.0.0.2");
    const bin = join(box, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "mesh"), `#!/bin/sh\nexec "${process.execPath}" "${join(REPO, "bin", "mesh.js")}" "$@"\n`);
    writeFileSync(join(bin, "systemctl"), FAKE_SYSTEMCTL);
    writeFileSync(join(bin, "scp"), FAKE_SCP);
    for (const f of ["mesh", "systemctl", "scp"]) chmodSync(join(bin, f), 0o755);
    writeFileSync(join(box, "hosts"), Object.entries(HOSTS).map(([h, m]) => `${h} ${m}`).join("\n") + "\n");
    for (const machine of Object.values(MACHINES)) mkdirSync(join(box, machine, "home"), { recursive: true });
    for (const { machine, script } of walkthroughBlocks(readFileSync(join(REPO, WALKTHROUGH.page), "utf8"))) {
      const root = join(box, machine);
      const text = script
        .replace(/(?<![:\w])\/var\/lib\//g, `${root}/var/lib/`)
        .replaceAll("bus.example.net:4222", `127.0.0.2:${port}`);
      mkdirSync(join(root, "var", "lib"), { recursive: true });
      const run = spawnSync("bash", ["-e", "-x", "-c", text], {
        cwd: join(root, "home"),
        env: { PATH: `${bin}:${process.env.PATH}`, HOME: join(root, "home"), MACHINE_ROOT: root, BOX: box, MESH_TIMEOUT_MS: "30000" },
        encoding: "utf8",
        timeout: 240_000,
      });
      logs.push(`--- ${machine}\n${run.stdout}\n${run.stderr}`);
      for (const m of Object.values(MACHINES)) {
        const runs = join(box, m, "run", "fake-systemd");
        if (!existsSync(runs)) continue;
        for (const f of readdirSync(runs).filter((n) => n.endsWith(".pid"))) {
          const pid = Number(readFileSync(join(runs, f), "utf8"));
          if (!started.includes(pid)) started.push(pid);
        }
      }
      if (run.status !== 0) {
        throw new Error(`the ${WALKTHROUGH.page} block on ${machine} failed (${run.status}):\n${logs.join("\n").slice(-6000)}`);
      }
    }
  });

  after(async () => {
    // The process groups the stand-in systemctl started (setsid: group id = pid), bus last.
    for (const pid of started.reverse()) {
      try { process.kill(-pid, "SIGTERM"); } catch { /* gone */ }
      if (isAlive(pid)) await stopPid(pid);
    }
    if (box) rmSync(box, { recursive: true, force: true });
  });

  it("R56: genesis, both agents admitted, a module on each, push applied, the bootstrap password refused", async () => {
    const genesisDir = join(box, "genesis", "var", "lib", "mesh");
    const listed = readUserList(readFileSync(join(genesisDir, "users.conf"), "utf8")).map((u) => u.user);
    for (const user of [busUser("node", "bushost"), busUser("node", "web1"), busUser("module", "broker"), busUser("module", "packet-filter")]) {
      assert.ok(listed.includes(user), `${user} is on the installed list (${listed.join(", ")})`);
    }
    for (const [machine, node] of [["genesis", "bushost"], ["node", "web1"]] as const) {
      const owned = JSON.parse(readFileSync(join(box, machine, "var", "lib", "mesh-host", "owned.json"), "utf8")) as { digest: string };
      assert.ok(owned.digest, `${node} applied a declaration`);
    }
    const mesh = JSON.parse(readFileSync(join(genesisDir, "mesh.json"), "utf8")) as { genesisAddress: string; fingerprint: string };
    assert.equal(mesh.genesisAddress, `tls://127.0.0.2:${port}`);
    await assert.rejects(connectToBus(
      { address: mesh.genesisAddress, user: BOOTSTRAP_USER, seed: BOOTSTRAP_SEED, fingerprint: mesh.fingerprint },
      { reconnect: false },
    ));
  });

  it("mesh status off the `mesh up` machine: on the genesis host (units started the controller and the host) and on the operator's machine (only ~/.mesh/operator.json) it asks the controller over the bus and never advises `mesh up`", () => {
    const status = (machine: string, ...args: string[]) => spawnSync(process.execPath, [join(REPO, "bin", "mesh.js"), "status", ...args], {
      cwd: join(box, machine, "home"), encoding: "utf8", timeout: 120_000,
      env: { PATH: process.env.PATH, HOME: join(box, machine, "home"), MESH_TIMEOUT_MS: "30000" },
    });
    const genesisDir = join(box, "genesis", "var", "lib", "mesh");
    for (const [machine, args] of [["genesis", ["--dir", genesisDir]], ["operator", []]] as const) {
      const human = status(machine, ...args);
      assert.equal(human.status, 0, `${machine}: ${human.stderr}${human.stdout}`);
      assert.doesNotMatch(`${human.stdout}${human.stderr}`, /mesh up|stopped/, `${machine}: a mesh runs elsewhere: nothing to start here`);
      assert.match(human.stdout, /bushost/);
      assert.match(human.stdout, /web1/);
      const json = status(machine, ...args, "--json");
      assert.equal(json.status, 0, `${machine}: ${json.stderr}`);
      const reply = JSON.parse(json.stdout) as { ok: boolean; processes: unknown[]; summary: { nodes: Array<{ name: string }>; processes: unknown[]; controller?: string } };
      assert.equal(reply.ok, true);
      assert.deepEqual(reply.summary.nodes.map((n) => n.name).sort(), ["bushost", "web1"]);
      assert.deepEqual(reply.summary.processes, [], `${machine}: no process here was started by \`mesh up\`, so none is reported as its (a list, as every list --json prints)`);
      assert.deepEqual(reply.processes, []);
    }
  });
});
