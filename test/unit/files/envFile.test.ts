import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EnvFileError, envFileText, parseEnvFile } from "../../../src/files/envFile.ts";
import { desiredFiles } from "../../../src/host/apply.ts";
import { initHostKeys, readNodePrivateKey } from "../../../src/host/index.ts";
import { newPassword } from "../../../src/crypto/secrets.ts";
import { hostDeclaration } from "../../support/hostDeclaration.ts";

/**
 * A module's `env` file reads unchanged in a POSIX shell (`set -a; . ./env`), in systemd's
 * `EnvironmentFile=` and in `node --env-file` (issue 27): each value single-quoted, and a value no
 * reader could take verbatim refused, naming the variable.
 */

const ENV: Record<string, string> = {
  MESH_WORK: '[{"seat":"mesh-build","stream":"WORK_MESH_BUILD","consumer":"holders-mesh-build","subjects":["mesh.work.mesh-build.build"]}]',
  MESH_INBOX_PREFIX: "_INBOX_module-web",
  MESH_BROKER_ADDRESS: "tls://bus.example:4222",
  MESH_EMPTY: "",
  MESH_ODD: "a $HOME `id` \\n \\ \"q\" # not a comment; x=y  ",
  MESH_UNICODE: "héllo ✓",
};

/** What systemd's EnvironmentFile= makes of a line whose value is single-quoted (systemd.exec(5): verbatim, no escapes). */
function systemdSingleQuoted(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const match = /^([A-Za-z_][A-Za-z0-9_]*)='([^']*)'$/.exec(line);
    assert.ok(match, `every line is KEY='verbatim value': ${line}`);
    out[match[1]!] = match[2]!;
  }
  return out;
}

describe("the env file", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-env-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  const probe = `process.stdout.write(JSON.stringify(Object.fromEntries(${JSON.stringify(Object.keys(ENV))}.map((k) => [k, process.env[k]]))))`;

  it("reads unchanged with set -a; . ./env in /bin/sh", () => {
    writeFileSync(join(dir, "env"), envFileText(ENV));
    const seen = execFileSync("/bin/sh", ["-c", `set -a; . ./env; exec "${process.execPath}" -e '${probe}'`], { cwd: dir, env: { PATH: process.env.PATH ?? "" }, encoding: "utf8" });
    assert.deepEqual(JSON.parse(seen), ENV);
  });

  it("reads unchanged with node --env-file", () => {
    writeFileSync(join(dir, "env"), envFileText(ENV));
    const seen = execFileSync(process.execPath, [`--env-file=${join(dir, "env")}`, "-e", probe], { env: { PATH: process.env.PATH ?? "" }, encoding: "utf8" });
    assert.deepEqual(JSON.parse(seen), ENV);
  });

  it("reads unchanged by systemd's documented rules for single-quoted values, and by parseEnvFile", () => {
    const text = envFileText(ENV);
    assert.deepEqual(systemdSingleQuoted(text), ENV);
    assert.deepEqual(parseEnvFile(text), ENV);
    assert.deepEqual(Object.keys(parseEnvFile(text)), Object.keys(ENV).sort(), "lines sorted by name");
  });

  it("refuses a value no reader takes verbatim, or an unsafe name, naming the variable", () => {
    for (const bad of ["it's", "a\nb", "a\rb", "a\0b", "\ufeffx", "\ud800", "\ufdd0"]) {
      assert.throws(() => envFileText({ MESH_X: bad }), (e: unknown) => e instanceof EnvFileError && e.variable === "MESH_X", JSON.stringify(bad));
    }
    assert.throws(() => envFileText({ "BAD NAME": "x" }), (e: unknown) => e instanceof EnvFileError && e.variable === "BAD NAME");
  });

  it("the env file a host writes for a module reads unchanged with set -a; . ./env, its JSON lists included", () => {
    const node = join(dir, "node");
    const { publicKey } = initHostKeys(node);
    const seed = newPassword();
    const env = { ...hostDeclaration("n1", publicKey, [{ module: "web", password: seed }], "d").modules[0]!.env, MESH_WORK: ENV.MESH_WORK! };
    const declaration = hostDeclaration("n1", publicKey, [{ module: "web", password: seed, extra: { env } }], "d");
    const files = desiredFiles(declaration, readNodePrivateKey(node), { stateDir: node });
    writeFileSync(join(dir, "env"), files.get("modules/web/env")!.text);
    const seen = execFileSync("/bin/sh", ["-c", `set -a; . ./env; exec "${process.execPath}" -e 'process.stdout.write(process.env.MESH_WORK)'`], { cwd: dir, env: { PATH: process.env.PATH ?? "" }, encoding: "utf8" });
    assert.equal(seen, ENV.MESH_WORK);
  });
});
