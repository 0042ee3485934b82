/**
 * Issue 29: `mesh get <kind> [name]` and `mesh describe <kind> <name>` as kubectl's, and how
 * `--watch` frames its drawings. Pure rendering and naming; the verbs against a real controller
 * are in test/bus/cliGet.test.ts.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_USAGE, UsageError, type CliIo } from "../../src/cli/context.ts";
import { GET_KINDS, describeLines, getKind, notFoundOf, pushOf } from "../../src/cli/getKinds.ts";
import { closestName } from "../../src/names.ts";
import { getOutput } from "../../src/cli/get.ts";
import { framePrefix } from "../../src/cli/watch.ts";
import type { HistoryEntry } from "../../src/contracts/verbs.ts";
import type { OutputFormat } from "../../src/cli/output.ts";

const NODES = [
  { name: "alpha", enrolledAt: "2026-01-01T00:00:00Z", overlayName: "alpha.internal", hub: true, modules: ["broker"], credentialAddress: "tls://a:4222", lastSent: { digest: "a".repeat(64), at: "2026-01-01T00:01:00Z" }, lastReport: { digest: "a".repeat(64), outcome: "applied", at: "2026-01-01T00:01:01Z", drift: [], sent: "a".repeat(64) } },
  { name: "beta", enrolledAt: "2026-01-01T00:00:00Z", overlayName: null, hub: false, modules: [], credentialAddress: null, lastSent: null, lastReport: null },
];

const globals = (output: OutputFormat) => ({ globals: { credential: "x", json: output !== "text" && output !== "wide", output, timeoutMs: 1 } });

function memoryIo(): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return { stdout: { write: (s: string) => { out += s; } }, stderr: { write: (s: string) => { err += s; } }, env: {}, out: () => out, err: () => err };
}

describe("mesh get and describe: kinds and names (issue 29)", () => {
  it("takes every kind the records hold, singular or plural", () => {
    for (const kind of GET_KINDS) {
      assert.equal(getKind("get", kind), kind);
      assert.equal(getKind("get", `${kind}s`), kind);
    }
  });

  it("a kind that is none is a usage error naming every kind and the closest", () => {
    assert.throws(() => getKind("get", "nods"), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      for (const kind of GET_KINDS) assert.match(error.message, new RegExp(kind));
      assert.match(error.message, /did you mean node\?/);
      assert.match(error.message, /^get: <kind>: /);
      return true;
    });
  });

  it("mesh get with a kind that is none exits 2 before dialling anything", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["get", "widgets"], io), EXIT_USAGE);
    assert.match(io.err(), /mesh: get: <kind>: "widgets" is not a kind/);
  });

  it("the closest name is one a few edits away, or none", () => {
    assert.equal(closestName("alhpa", ["alpha", "beta"]), "alpha");
    assert.equal(closestName("zzzzzz", ["alpha", "beta"]), undefined);
    assert.equal(closestName("x", []), undefined);
  });

  it("a name that is none is not-found, naming the closest and where the names are", () => {
    const refusal = notFoundOf("node", "alhpa", NODES);
    assert.equal(refusal.code, "not-found");
    assert.match(refusal.message, /did you mean alpha\?/);
    assert.match(refusal.message, /mesh get node/);
  });

  it("a push is what its history says: when, by whom, the nodes it sent", () => {
    const entry = (type: string, details: Record<string, unknown>): HistoryEntry => ({ sequence: 1, commandId: "c", actor: "operator-ann", at: "2026-01-01T00:00:00Z", type, filedUnder: "push:p1", summary: "", details });
    assert.deepEqual(pushOf("p1", [entry("DeclarationSent", { node: "alpha" }), entry("DeclarationSent", { node: "beta" }), entry("ProvisionMinted", {})]), {
      id: "p1", at: "2026-01-01T00:00:00Z", actor: "operator-ann", sent: ["alpha", "beta"], provisions: 1,
    });
  });
});

describe("mesh get: output (issue 29)", () => {
  it("text is a table of the kind's columns, a node's last report in one line", () => {
    const lines = getOutput(globals("text"), "node", NODES, false);
    assert.match(lines[0]!, /^NAME\s+OVERLAY\s+HUB\s+MODULES\s+ADDRESS\s+LAST REPORT$/);
    assert.match(lines[1]!, /^alpha\s+alpha\.internal\s+true\s+broker\s+tls:\/\/a:4222\s+aaaaaaaaaaaa applied at/);
    assert.match(lines[2]!, /^beta\s+-\s+false/);
  });

  it("-o name is kind/name per item; a credential is named by its bus user", () => {
    assert.deepEqual(getOutput(globals("name"), "node", NODES, false), ["node/alpha", "node/beta"]);
    assert.deepEqual(getOutput(globals("name"), "credential", [{ user: "operator-ann", principal: { kind: "operator", name: "ann" } }], true), ["credential/operator-ann"]);
  });

  it("-o json holds the list under its list verb's field, one item under its kind", () => {
    assert.deepEqual(JSON.parse(getOutput(globals("json"), "node", NODES, false).join("\n")), { ok: true, nodes: NODES });
    assert.deepEqual(JSON.parse(getOutput(globals("json"), "node", [NODES[0]!], true).join("\n")), { ok: true, node: NODES[0] });
    assert.deepEqual(parseYaml(getOutput(globals("yaml"), "node", [NODES[1]!], true).join("\n")), { ok: true, node: NODES[1] });
  });

  it("-o wide keeps every cell whole on a narrow terminal; text cuts to its width", () => {
    const narrow = { ...globals("text"), io: { stdout: { write: () => true, isTTY: true, columns: 60 } } };
    assert.ok(getOutput(narrow, "node", NODES, false).every((l) => l.length <= 60));
    const wide = { ...globals("wide"), io: { stdout: { write: () => true, isTTY: true, columns: 60 } } };
    assert.ok(getOutput(wide, "node", NODES, false).some((l) => l.length > 60));
  });
});

describe("mesh describe: one item in full (issue 29)", () => {
  const history = { events: [{ sequence: 3, commandId: "c", actor: "operator-ann", at: "2026-01-01T00:00:00Z", type: "NodeEnrolled", filedUnder: "node:alpha", summary: "node alpha enrolled", details: {} }], total: 12 };

  it("every field as Label: value, the node's last report in full, then its newest events", () => {
    const lines = describeLines({ kind: "node", item: NODES[0]!, history });
    assert.equal(lines[0], "Node alpha");
    assert.ok(lines.some((l) => /^ {2}Overlay name: +alpha\.internal$/.test(l)), lines.join("\n"));
    assert.ok(lines.some((l) => /^ {2}Modules: +broker$/.test(l)));
    const report = lines.indexOf("Last report:");
    assert.ok(report > 0);
    assert.match(lines[report + 2]!, /^ {2}Outcome: +applied$/);
    assert.ok(lines.includes("History (the newest 1 of 12; mesh history for more):"));
    assert.ok(lines.some((l) => /node alpha enrolled/.test(l)));
  });

  // Found by a new-user trial: a report's modules were one comma-separated line of them all.
  it("describe writes a list of records (a report's modules) one a line, aligned under the first", () => {
    const modules = [{ module: "echo", state: "running", restarts: 0 }, { module: "hello", state: "exited", restarts: 3 }];
    const item = { ...NODES[0]!, lastReport: { ...NODES[0]!.lastReport, modules } };
    const lines = describeLines({ kind: "node", item, history: null });
    const first = lines.findIndex((l) => /^ {2}Modules: +module=echo state=running restarts=0$/.test(l));
    assert.ok(first > 0, lines.join("\n"));
    assert.equal(lines[first + 1], `${" ".repeat(lines[first]!.indexOf("module="))}module=hello state=exited restarts=3`);
  });

  it("a node that never reported says none; an item whose history could not be read shows no history", () => {
    const lines = describeLines({ kind: "node", item: NODES[1]!, history: null });
    assert.equal(lines[lines.indexOf("Last report:") + 1], "  none");
    assert.ok(!lines.some((l) => l.startsWith("History")));
  });
});

describe("--watch: frames (issue 29)", () => {
  it("clears a terminal before each drawing, parts drawings in a pipe, adds nothing to a stream of objects", () => {
    assert.equal(framePrefix(true, { tty: true, data: false }), "\x1b[2J\x1b[H");
    assert.equal(framePrefix(true, { tty: false, data: false }), "");
    assert.equal(framePrefix(false, { tty: false, data: false }), "\n");
    assert.equal(framePrefix(false, { tty: true, data: true }), "");
  });
});
