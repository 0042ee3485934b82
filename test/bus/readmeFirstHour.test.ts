import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../installer/serverConfig.ts";

/**
 * README.md's "A first hour", run as written (issue 29): a mesh made by `mesh up` in a folder of
 * its own, a HOME of its own, and `mesh` on the PATH. Each ```sh block runs by bash -e in the
 * mesh's folder; a line whose comment says "exit 1" must exit 1. The files the page shows are
 * written where the line before each names them (`~/hello/hello.mjs`). Substitutions, and no
 * other: the clone's path for `/path/to/mesh-controller`, the test's HOME for `/home/you`.
 */

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const SECTION = "## A first hour";

type Block = { lang: string; text: string; file?: string };

/** The section's fenced blocks, in order, each with the `~/...` file its lead-in line names. */
export function firstHourBlocks(readme: string): Block[] {
  const start = readme.indexOf(SECTION);
  assert.ok(start >= 0, `README.md has the section ${SECTION}`);
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  let after = 0;
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => {
    const leadIn = section.slice(after, m.index).trim().split("\n\n").at(-1) ?? "";
    after = m.index + m[0].length;
    const file = /`(~\/[^`]+)`/.exec(leadIn)?.[1];
    return { lang: m[1]!, text: m[2]!, ...(file && m[1] !== "sh" ? { file } : {}) };
  });
}

/** A block's lines as bash runs them: a line commented "exit 1" must exit 1, the others 0. */
function asScript(text: string): string {
  return text.split("\n").map((line) => {
    if (!/#.*\bexit 1\b/.test(line)) return line;
    const command = line.replace(/\s+#.*$/, "");
    return `set +e; ${command}; rc=$?; set -e; [ "$rc" -eq 1 ] || { echo "expected exit 1, got $rc: ${command.replace(/"/g, "'")}" >&2; exit 1; }`;
  }).join("\n");
}

describe("README.md: A first hour, run as written", { timeout: 300_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), "mesh-first-hour-"));
  const home = join(root, "home");
  const meshDir = join(root, "mesh");
  const bin = join(root, "bin");
  const env = (): NodeJS.ProcessEnv => ({ ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config"), PATH: `${bin}:${process.env.PATH ?? ""}` });
  const bash = (script: string) => spawnSync("bash", ["-e", "-c", script], { cwd: meshDir, env: env(), encoding: "utf8", timeout: 120_000 });

  before(async () => {
    for (const dir of [home, meshDir, bin]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(bin, "mesh"), `#!/bin/sh\nexec node ${JSON.stringify(join(REPO, "bin/mesh.js"))} "$@"\n`);
    chmodSync(join(bin, "mesh"), 0o755);
    const up = bash(`mesh up --address tls://127.0.0.1:${await freePort()}`);
    assert.equal(up.status, 0, `mesh up:\n${up.stdout}\n${up.stderr}`);
    // The page says the greeter runs: the agent marks it running once it stayed up a moment.
    const running = bash("for i in $(seq 1 40); do mesh nodes | grep -q 'greeter running' && exit 0; sleep 0.5; done; mesh nodes; exit 1");
    assert.equal(running.status, 0, `the greeter runs after mesh up:\n${running.stdout}\n${running.stderr}`);
  });

  after(() => {
    bash("mesh down");
    rmSync(root, { recursive: true, force: true });
  });

  it("issue 29: every block of A first hour runs as written, and the module written there answers", () => {
    const blocks = firstHourBlocks(readFileSync(join(REPO, "README.md"), "utf8"));
    assert.ok(blocks.some((b) => b.file !== undefined), "the page shows the files of its module");
    let last = "";
    for (const block of blocks) {
      const text = block.text.replaceAll("/path/to/mesh-controller", REPO).replaceAll("/home/you", home);
      if (block.file !== undefined) {
        writeFileSync(join(home, block.file.slice(2)), text);
        continue;
      }
      if (block.lang !== "sh") continue;
      const run = bash(asScript(text));
      assert.equal(run.status, 0, `block:\n${text}\nout:\n${run.stdout}\nerr:\n${run.stderr}`);
      last = run.stdout;
    }
    assert.match(last + bash("mesh tool call hello hello '{\"name\": \"ada\"}'").stdout, /"hello":"ada"/);
  });
});
