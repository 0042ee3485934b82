import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { appliedOf, renderSummary, serversDown, serversDownLine, type UpSummary } from "../../src/up/summary.ts";

const SENT = "a".repeat(64);
const OLDER = "b".repeat(64);
const AT = "2026-12-01T03:00:00.000Z";

function node(name: string, lastSent: string | null): UpSummary["nodes"][number] {
  return { name, overlayName: null, hub: false, modules: [], credentialAddress: null, lastSent };
}

describe("mesh status: what each node applied", () => {
  it("R55: a remote node's last report on the bus says what it applied, when and its drift; the local node its own record", () => {
    const nodes = [node("local", SENT), node("remote", SENT), node("behind", SENT), node("broken", SENT), node("silent", SENT), node("new", null)];
    const applied = appliedOf(nodes, [
      { node: "remote", at: AT, digest: SENT, ok: true, drift: ["modules/web/env"] },
      { node: "behind", at: AT, digest: OLDER, ok: true },
      { node: "broken", at: AT, digest: SENT, ok: false, error: "a secret does not open" },
    ], { node: "local", digest: SENT, files: ["modules/web/env"] });
    const byNode = Object.fromEntries(applied.map((a) => [a.node, a]));
    assert.deepEqual(byNode.local, { node: "local", digest: SENT, ok: true, files: ["modules/web/env"] });
    assert.deepEqual(byNode.remote, { node: "remote", digest: SENT, ok: true, files: [], reportedAt: AT, drift: ["modules/web/env"] });
    assert.equal(byNode.behind!.ok, false, "a report of an older declaration is not what was sent");
    assert.match(byNode.behind!.error!, /last reported applied bbbbbbbbbbbb/);
    assert.equal(byNode.broken!.ok, false);
    assert.equal(byNode.broken!.error, "a secret does not open");
    assert.equal(byNode.silent!.ok, false);
    assert.match(byNode.silent!.error!, /no report/);
    assert.equal(byNode.new!.error, "nothing sent yet");
    const lines = renderSummary({
      mesh: { genesisAddress: "tls://127.0.0.1:4222", fingerprint: "AB", dir: "/x" }, nodes, seats: [], busUsers: [], applied, processes: {},
    }).join("\n");
    assert.match(lines, /remote\s+aaaaaaaaaaaa\s+ok, reported 2026-12-01T03:00:00.000Z, 1 drifted file\(s\) written back/);
    assert.match(lines, /silent\s+aaaaaaaaaaaa|silent\s+-\s+NOT APPLIED/);
  });

  it("R55: the local node's row says when it last reported applying its declaration too (its own record gives the files, the bus the time)", () => {
    const applied = appliedOf([node("local", SENT)], [{ node: "local", at: AT, digest: SENT, ok: true }], { node: "local", digest: SENT, files: ["modules/web/env"] });
    assert.deepEqual(applied, [{ node: "local", digest: SENT, ok: true, files: ["modules/web/env"], reportedAt: AT }]);
    const stale = appliedOf([node("local", SENT)], [{ node: "local", at: AT, digest: OLDER, ok: true }], { node: "local", digest: SENT, files: [] });
    assert.equal(stale[0]!.reportedAt, undefined, "a report of another declaration is not when this one was applied");
    const lines = renderSummary({
      mesh: { genesisAddress: "tls://127.0.0.1:4222", fingerprint: "AB", dir: "/x" }, nodes: [node("local", SENT)], seats: [], busUsers: [], applied, processes: {},
    }).join("\n");
    assert.match(lines, /local\s+aaaaaaaaaaaa\s+ok, 1 files, reported 2026-12-01T03:00:00.000Z/);
  });

  it("R55: the local node's row, when its host holds an older declaration than the one last sent, says both, never 'NOT APPLIED: -' (a new-user trial: its agent was stopped during a push)", () => {
    const applied = appliedOf([node("local", SENT)], [{ node: "local", at: AT, digest: OLDER, ok: true }], { node: "local", digest: OLDER, files: [] });
    assert.equal(applied[0]!.ok, false);
    assert.equal(applied[0]!.error, `sent ${SENT.slice(0, 12)}, last applied ${OLDER.slice(0, 12)} (its host's own record)`);
  });
});

describe("mesh status: a bus server down (issue 26 fault 8)", () => {
  const servers = [
    { name: "mesh-bus-1", address: "tls://127.0.0.1:4001", process: "bus-1" },
    { name: "mesh-bus-2", address: "tls://127.0.0.1:4002", process: "bus-2" },
    { name: "mesh-bus-3", address: "tls://127.0.0.1:4003", process: "bus-3" },
  ];

  it("R62: a server whose process mesh up started is stopped, or that did not answer a dial, is down, named with its address and why; the others are not", () => {
    const down = serversDown(servers, { "bus-1": 11, "bus-2": null, "bus-3": 13 }, new Map([["tls://127.0.0.1:4003", "connect ECONNREFUSED 127.0.0.1:4003"]]));
    assert.deepEqual(down.map((s) => [s.name, s.address]), [["mesh-bus-2", "tls://127.0.0.1:4002"], ["mesh-bus-3", "tls://127.0.0.1:4003"]]);
    assert.match(down[0]!.why, /process .*not running/);
    assert.match(down[1]!.why, /ECONNREFUSED/);
    assert.deepEqual(serversDown(servers, { "bus-1": 11, "bus-2": 12, "bus-3": 13 }, new Map()), []);
    assert.deepEqual(serversDown(servers, {}, new Map()), [], "processes not mesh up's: only a dial can say");
    assert.deepEqual(serversDown([{ name: "tls://h:1", address: "tls://h:1" }], {}, new Map([["tls://h:1", "timeout"]])).map((s) => s.name), ["tls://h:1"], "a server known by its address alone");
  });

  it("R62: the line names every server down and says the rest of the cluster still serves", () => {
    const line = serversDownLine(serversDown(servers, { "bus-2": null }, new Map()), "`mesh up --dir /m` starts it again");
    assert.match(line, /mesh-bus-2 \(tls:\/\/127\.0\.0\.1:4002\) is down/);
    assert.match(line, /`mesh up --dir \/m` starts it again/);
  });
});
