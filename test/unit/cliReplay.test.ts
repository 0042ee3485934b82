import { describe, it } from "node:test";
import assert from "node:assert/strict";
// The verbs first: src/cli/replay.ts is one of them, and the registry imports it (as the CLI loads them).
import "../../src/cli/verbs.ts";
import { renderReplay } from "../../src/cli/replay.ts";

/** What `mesh replay --accept-restore` prints (R44, R64): nodes are never minted a key. */
describe("renderReplay of an accepted restore", () => {
  const accepted = {
    ok: true, accepted: true, sequence: 35, lost: { from: 35, to: 37 }, changed: true,
    rotated: [{ kind: "controller", name: "mesh-controller" }, { kind: "module", name: "web" }, { kind: "node", name: "vm" }, { kind: "operator", name: "admin" }],
    revoked: [{ kind: "node", name: "old1" }],
    unknownToRecords: [],
    absentFromInstalledList: [
      { kind: "module", name: "gone", user: "module-gone", why: "w", next: "undo it again" },
      { kind: "node", name: "old1", user: "node-old1", why: "w", next: "its key is revoked (the bus ran without it)" },
    ],
  };

  it("R44 R64: names fresh keys for the minted principals only, and the nodes as keeping their own", () => {
    const lines = renderReplay(accepted);
    const fresh = lines.find((l) => l.startsWith("fresh"));
    assert.ok(fresh !== undefined && fresh.includes("module web") && !fresh.includes("node vm"), lines.join("\n"));
    assert.ok(lines.some((l) => l.includes("node vm") && /own key/.test(l)), lines.join("\n"));
  });

  it("R44 R64: principals absent from the list the bus runs: minted ones get a credential handed to nobody, a node none (its key is revoked)", () => {
    const lines = renderReplay(accepted);
    const header = lines.find((l) => l.startsWith("in the records but NOT on the list the bus runs"));
    assert.ok(header !== undefined, lines.join("\n"));
    assert.match(header, /handed to nobody/);
    assert.match(header, /a node/);
    assert.doesNotMatch(header, /fresh credentials minted, none handed out/);
    const onlyNodes = renderReplay({ ...accepted, absentFromInstalledList: [accepted.absentFromInstalledList[1]] });
    const nodeHeader = onlyNodes.find((l) => l.startsWith("in the records but NOT on the list the bus runs"))!;
    assert.doesNotMatch(nodeHeader, /minted/, "no node is minted a key");
  });
});
