import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startCommandMesh, type CommandMesh } from "../support/commandMesh.ts";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE } from "../../src/cli/context.ts";
import { newNodeKeyPair, newUserKey, secretMatches } from "../../src/crypto/secrets.ts";
import { commandSubject, inboxPrefix, principalKey } from "../../src/names.ts";
import { runMesh, type CliRun } from "../support/cli.ts";
import { credentialAt } from "../../src/projections/index.ts";

const OPERATOR = "operator-ann";

type Run = CliRun;

describe("mesh CLI over a real server", () => {
  let mesh: CommandMesh;
  let dir: string;
  let credentialFile: string;
  const nodeKeys = () => ({ ...newNodeKeyPair(), user: newUserKey() });
  const keys = { alpha: nodeKeys(), beta: nodeKeys(), gamma: nodeKeys() };
  const examples = readdirSync("examples").filter((f) => f.endsWith(".json")).map((f) => join("examples", f));
  const ASSIGNMENTS = [["broker", "alpha"], ["store", "beta"], ["builder", "gamma"], ["showcase", "gamma"], ["packet-filter", "alpha"], ["packet-filter", "beta"]] as const;
  /** The example mesh every test starts from, made through the CLI in `before`; the R1, R6, R7 test asserts each step's run. */
  const made = {
    enrolled: {} as Record<string, Run>,
    registered: undefined as Run | undefined,
    issued: undefined as Run | undefined,
    assigned: [] as Array<{ module: string; node: string; run: Run }>,
    placed: [] as Run[],
  };

  before(async () => {
    mesh = await startCommandMesh();
    dir = mkdtempSync(join(tmpdir(), "mesh-cli-"));
    credentialFile = join(dir, "operator.json");
    writeFileSync(credentialFile, JSON.stringify({ address: mesh.server.url, user: OPERATOR, password: "operator-password" }));
    for (const [node, pair] of Object.entries(keys)) made.enrolled[node] = await mesh_("node", "enrol", node, "--key", pair.publicKey, "--nkey", pair.user.publicKey, "--json");
    made.registered = await mesh_("module", "register", ...examples);
    made.issued = await mesh_("module", "issue", "showcase");
    for (const [module, node] of ASSIGNMENTS) made.assigned.push({ module, node, run: await mesh_("assign", module, node) });
    made.placed.push(await mesh_("overlay", "place", "alpha", "--hub"), await mesh_("overlay", "place", "beta"));
  });
  after(async () => {
    await mesh?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `mesh <argv>` in-process with the operator's credential from MESH_CREDENTIAL. */
  function mesh_(...argv: string[]): Promise<Run> {
    return runMesh(argv, { MESH_CREDENTIAL: credentialFile });
  }

  /** Runs a verb that must be refused: exit 1, the given code, and the records unchanged. */
  async function refusedWith(code: string, ...argv: string[]): Promise<Record<string, unknown>> {
    const before = await mesh.lastSequence();
    const run = await mesh_(...argv, "--json");
    assert.equal(run.code, EXIT_REFUSED, `${argv.join(" ")}: ${run.out} ${run.err}`);
    const error = run.json().error as Record<string, unknown>;
    assert.equal(error.code, code, JSON.stringify(error));
    assert.ok(run.err.includes(code), "stderr names the refusal");
    assert.equal(await mesh.lastSequence(), before, "the CATALOGUE stream's last sequence is unchanged");
    return error;
  }

  function manifestFile(name: string, manifest: unknown): string {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, typeof manifest === "string" ? manifest : JSON.stringify(manifest));
    return file;
  }

  it("R1, R6, R7: enrols, registers the example mesh, issues, assigns, places the overlay; `where --json` answers what was placed", async () => {
    for (const [node, pair] of Object.entries(keys)) {
      const run = made.enrolled[node]!;
      assert.equal(run.code, EXIT_OK, run.err);
      const credential = run.json().credential as { nkey: string; user: string; address: string };
      assert.equal(credential.nkey, pair.user.publicKey, "R64: the reply names the node's own key");
      assert.ok(secretMatches(pair.user.seed, credentialAt(mesh.catalogue.state.credentials, principalKey("node", node))!));
      assert.doesNotMatch(run.out, /sealed|seed|password/, "no secret in the reply");
    }
    assert.ok(examples.length >= 8, "the example mesh is in examples/");
    const registered = made.registered!;
    assert.equal(registered.code, EXIT_OK, registered.err);
    assert.equal(registered.out.trim().split("\n").length, examples.length, registered.out);

    assert.equal(made.issued!.code, EXIT_OK);
    assert.deepEqual(made.assigned.map(({ module, node }) => [module, node]), ASSIGNMENTS.map(([module, node]) => [module, node]));
    for (const { module, node, run } of made.assigned) assert.equal(run.code, EXIT_OK, `${module} → ${node}: ${run.err}`);
    assert.equal(made.placed.length, 2);
    for (const run of made.placed) assert.equal(run.code, EXIT_OK);

    const where = await mesh_("where", "--json");
    assert.equal(where.code, EXIT_OK, where.err);
    const answer = where.json();
    assert.equal(answer.ok, true);
    assert.deepEqual(answer.placed, [
      { node: "alpha", overlayName: "alpha.internal", hub: true, broker: true },
      { node: "beta", overlayName: "beta.internal", hub: false, broker: false },
    ], "a list of objects, not a map");
    assert.equal(answer.hub, "alpha");
    assert.equal(answer.broker, "alpha");

    const readable = await mesh_("where");
    assert.match(readable.out, /alpha\s+alpha\.internal\s+hub,broker/);
  });

  it("R33: the CLI's request carries a reply subject on the operator's own inbox prefix", async () => {
    const watcher: NatsConnection = await connect({ servers: mesh.server.url });
    try {
      const seen: string[] = [];
      const sub = watcher.subscribe(commandSubject(OPERATOR, "where"), { callback: (_e, m) => { seen.push(m.reply ?? ""); } });
      await watcher.flush();
      assert.equal((await mesh_("where")).code, EXIT_OK);
      await watcher.flush();
      sub.unsubscribe();
      assert.equal(seen.length, 1);
      assert.ok(seen[0]!.startsWith(`${inboxPrefix(OPERATOR)}.`), seen[0]);
    } finally {
      await watcher.close();
    }
  });

  it("history, nodes, modules, seats and credentials answer (never a secret)", async () => {
    const history = await mesh_("history", "node", "alpha", "--json");
    assert.equal(history.code, EXIT_OK, history.err);
    const events = history.json().events as Array<Record<string, unknown>>;
    assert.ok(events.some((e) => e.type === "NodeEnrolled" && e.actor === OPERATOR && typeof e.commandId === "string" && typeof e.at === "string"));
    for (const verb of ["nodes", "modules", "seats", "credentials"]) {
      const run = await mesh_(verb);
      assert.equal(run.code, EXIT_OK, `${verb}: ${run.err}`);
      assert.ok(!run.out.includes("$2"), `${verb} prints no bcrypt hash`);
    }
    assert.match((await mesh_("nodes")).out, /^NAME\s+OVERLAY\s+HUB\s+MODULES\s+ADDRESS/m);
  });

  it("R17: history answers every event about an entity wherever it was filed: a node's assignments, a seat's declaration", async () => {
    const node = await mesh_("history", "node", "alpha");
    assert.equal(node.code, EXIT_OK, node.err);
    assert.match(node.out, /ModuleAssigned\s+module broker assigned to node alpha/);
    const seat = await mesh_("history", "seat", "mesh-broker", "--json");
    assert.equal(seat.code, EXIT_OK, seat.err);
    const events = seat.json().events as Array<Record<string, unknown>>;
    assert.ok(events.some((e) => e.type === "ModuleRegistered" && e.filedUnder === "module/broker"), JSON.stringify(events));
    assert.ok(!seat.out.includes("$2"), "no bcrypt hash");
    const limited = await mesh_("history", "node", "alpha", "--limit", "1", "--json");
    assert.equal(limited.code, EXIT_OK, limited.err);
    assert.equal((limited.json().events as unknown[]).length, 1);
    assert.equal(limited.json().truncated, true);
    assert.equal((await mesh_("history", "node", "alpha", "--limit", "0")).code, EXIT_USAGE);
  });

  it("history refuses a mistyped kind before asking (a usage error, exit 2), naming the valid kinds", async () => {
    const run = await mesh_("history", "nde", "alpha");
    assert.equal(run.code, EXIT_USAGE, run.err);
    assert.match(run.err, /kind: .*node/);
  });

  it("re-registering the example mesh unchanged appends nothing and says so", async () => {
    const before = await mesh.lastSequence();
    const again = await mesh_("module", "register", ...examples);
    assert.equal(again.code, EXIT_OK, again.err);
    assert.match(again.out, /unchanged/);
    assert.equal(await mesh.lastSequence(), before, "the CATALOGUE stream's last sequence is unchanged");
  });

  it("R40: the same --command-id twice appends once and says so", async () => {
    const first = await mesh_("unassign", "packet-filter", "beta", "--command-id", "unassign-pf-beta", "--json");
    assert.equal(first.code, EXIT_OK, first.err);
    const after = await mesh.lastSequence();
    const again = await mesh_("unassign", "packet-filter", "beta", "--command-id", "unassign-pf-beta", "--json");
    assert.equal(again.code, EXIT_OK, again.err);
    assert.equal(again.json().duplicate, true);
    assert.equal(again.json().sequence, first.json().sequence);
    assert.equal(await mesh.lastSequence(), after);
    const readable = await mesh_("unassign", "packet-filter", "beta", "--command-id", "unassign-pf-beta");
    assert.match(readable.out, /already applied/);
  });

  it("R23: an unknown manifest field is refused, naming it", async () => {
    const error = await refusedWith("invalid-manifest", "module", "register", manifestFile("colourful", { name: "colourful", version: "1", colour: "red" }));
    assert.equal(error.field, "manifest.colour");
  });

  it("R23: a manifest field of the wrong type is refused, naming it", async () => {
    const error = await refusedWith("invalid-manifest", "module", "register", manifestFile("typed", { name: "typed", version: 3 }));
    assert.equal(error.field, "manifest.version");
  });

  it("R25: a claim on a seat nobody declared is refused", async () => {
    await refusedWith("unknown-seat", "module", "register", manifestFile("claimer", { name: "claimer", version: "1", claims: ["mesh-nowhere"] }));
  });

  it("a second enrolment of a name is refused", async () => {
    const error = await refusedWith("node-exists", "node", "enrol", "alpha", "--key", newNodeKeyPair().publicKey, "--nkey", newUserKey().publicKey);
    assert.equal(error.field, "node");
  });

  it("assigning an unknown module, or to an unknown node, is refused", async () => {
    await refusedWith("unknown-module", "assign", "no-such-module", "alpha");
    await refusedWith("unknown-node", "assign", "broker", "no-such-node");
  });

  it("R9: a second hub is refused, naming the hub that exists", async () => {
    const error = await refusedWith("hub-exists", "overlay", "place", "gamma", "--hub");
    assert.ok(String(error.message).includes("alpha"));
  });

  it("R27: an alias cycle is refused, and so is an alias onto a seat that does not exist", async () => {
    assert.equal((await mesh_("seat", "alias", "build-old", "mesh-build")).code, EXIT_OK);
    assert.equal((await mesh_("seat", "alias", "build-older", "build-old")).code, EXIT_OK);
    await refusedWith("alias-cycle", "seat", "alias", "build-old", "build-older");
    await refusedWith("unknown-seat", "seat", "alias", "elsewhere", "no-such-seat");
  });

  it("a manifest file that is not JSON is a usage error (exit 2) and sends nothing", async () => {
    const before = await mesh.lastSequence();
    const run = await mesh_("module", "register", manifestFile("broken", "{ not json"));
    assert.equal(run.code, EXIT_USAGE);
    assert.match(run.err, /broken\.json/);
    assert.equal(await mesh.lastSequence(), before);
  });

  it("a payload over 1 MiB gives a clear error (exit 2), no stack trace, and the records unchanged", async () => {
    const before = await mesh.lastSequence();
    const run = await mesh_("module", "register", manifestFile("huge", { name: "huge", version: "1", description: "x".repeat(1024 * 1024 + 1) }));
    assert.equal(run.code, EXIT_USAGE);
    assert.match(run.err, /bytes/);
    assert.ok(!/\n\s+at /.test(run.err), "no stack trace");
    assert.equal(await mesh.lastSequence(), before);
  });

  it("a verb that does not exist is a usage error (exit 2)", async () => {
    const before = await mesh.lastSequence();
    const run = await mesh_("node", "frobnicate", "alpha");
    assert.equal(run.code, EXIT_USAGE);
    assert.equal(await mesh.lastSequence(), before);
  });

  it("a refusal names the field and the fix on stderr (exit 1)", async () => {
    const run = await mesh_("assign", "broker", "no-such-node");
    assert.equal(run.code, EXIT_REFUSED);
    assert.match(run.err, /refused \(unknown-node\) at "node"/);
    assert.equal(run.out, "");
  });
});
