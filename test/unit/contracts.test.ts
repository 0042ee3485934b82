import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { VERBS, isVerb, type Verb } from "../../src/contracts/verbs.ts";
import { ContractError, CONTRACT_VERSIONS, versionRefusal } from "../../src/contracts/version.ts";
import { Declaration, declarationProblem, parseDeclaration } from "../../src/contracts/declaration.ts";
import { parseHostReport } from "../../src/contracts/report.ts";
import { parseReply } from "../../src/client/client.ts";
import { commands, queries, definitionOf, parseRequest, type Envelope } from "../../src/commands/index.ts";
import { commandReply, dryRunOf, handleCommand, queryReply, spread, stamped, withoutSecrets, type ServeDependencies } from "../../src/serve/server.ts";
import { QueryRefused } from "../../src/commands/envelope.ts";
import { pageOf } from "../../src/commands/paging.ts";
import { evolve, type State } from "../../src/projections/index.ts";
import { composeDeclarations } from "../../src/compose/index.ts";
import { PUSH_VERB, pushVerb } from "../../src/push/pushCommand.ts";
import { REPORTS_VERB, reportsVerb } from "../../src/push/reports.ts";
import { redactDeclaration, sha256 } from "../../src/push/composition.ts";
import { type PushReport } from "../../src/push/push.ts";
import { REPLAY_VERB } from "../../src/commands/replay.ts";
import { EXAMPLE_CONFIG, exampleMesh } from "./compose/exampleMesh.ts";
import { FAKE_TOOLS, NODE_KEY, NOW, fakeSecret, nodeNkeyOf } from "../support/givenWhenThen.ts";
import { fakeReports } from "../support/fakeReports.ts";
import { askShell } from "../support/shellVerb.ts";

/**
 * The contracts (src/contracts, issue 12): every verb the controller answers has a request and a
 * reply schema; what the controller's decides, answers and handlers build parses with them, as the
 * typed client parses it; a peer of another version is refused naming `v`.
 */

const MAX_PAYLOAD = 1024 * 1024;
const ASKER = "operator-ada";
const envelope = (commandId: string): Envelope => ({ commandId, actor: ASKER, now: NOW, secrets: Array.from({ length: 40 }, (_, i) => fakeSecret(i + 1)) });

/** The wire reply of an accepted command over `state`, as handleCommand builds it, and the state after it. */
function accept(state: State, verb: string, request: Record<string, unknown>): { wire: unknown; after: State } {
  const def = commands[verb];
  assert.ok(def, verb);
  const parsed = parseRequest(def.schema, request);
  assert.ok(parsed.ok, parsed.ok ? "" : `${verb}: ${parsed.refusal.message}`);
  const env = envelope(`cmd-${verb}`);
  const decision = def.decide(state, parsed.value, { ...env, secrets: env.secrets.slice(0, def.secretsNeeded(state, parsed.value)) });
  assert.ok(decision.ok, decision.ok ? "" : `${verb} refused ${decision.refusal.code}: ${decision.refusal.message}`);
  const sequence = state.sequence + 1;
  const after = decision.unchanged ? state : evolve(state, [{ sequence, commit: { commandId: env.commandId, entity: decision.entity, events: decision.events } }]);
  const answer = spread(def.reply(after, decision.events, FAKE_TOOLS, decision.entity, parsed.value));
  const reply = commandReply(def, env.commandId, { duplicate: false, ...(decision.unchanged ? { unchanged: true } : {}), sequence }, answer, MAX_PAYLOAD);
  return { wire: stamped(reply), after };
}

/** The wire reply of a query over `state`, as handleCommand builds it (one page of a list verb when `page` is given). */
function ask(state: State, verb: string, request: Record<string, unknown> = {}, page?: { limit: number }): unknown {
  const def = queries[verb];
  assert.ok(def, verb);
  const parsed = parseRequest(def.schema, request);
  assert.ok(parsed.ok, parsed.ok ? "" : `${verb}: ${parsed.refusal.message}`);
  const answered = def.answer(state, parsed.value, { compose: EXAMPLE_CONFIG });
  assert.ok(!(answered instanceof QueryRefused), verb);
  const answer = spread(answered);
  if (page === undefined || def.page === undefined) return stamped(queryReply(state.sequence, answer));
  const cut = pageOf(verb, def.page, answer, page, MAX_PAYLOAD);
  assert.ok(cut.ok);
  return stamped(queryReply(state.sequence, cut.value));
}

/** A push report as push() returns it: one node of every outcome, a left-out principal, a refused list. */
function pushReport(state: State, dryRun: boolean): PushReport {
  const composed = composeDeclarations(state, EXAMPLE_CONFIG, sha256);
  return {
    pushId: "push-1", dryRun, recordsSequence: state.sequence,
    nodes: [
      { node: "alpha", outcome: "applied", digest: "d1" },
      { node: "beta", outcome: "refused", refusal: { code: "provision-missing", message: "m", field: "node" } },
      { node: "gamma", outcome: "unchanged", digest: "d3", reportedAt: NOW, modulesLeftOut: [{ module: "showcase", reason: "no credential" }] },
      { node: "delta", outcome: "failed", error: "disk full" },
    ],
    leftOut: [{ principal: { kind: "module", name: "npm-registry" }, reason: "not assigned" }],
    userList: { code: "user-list-undelivered", message: "m" },
    freshCredentials: [{ kind: "node", name: "alpha" }],
    freshProvisions: [{ seat: "artifacts", provision: "artifacts", consumer: "showcase" }],
    provisionsMinted: 1,
    controllerRotation: "pending",
    raised: { created: 1, updated: 0, refused: [{ object: "WORK_x", reason: "r" }] },
    timedOut: ["delta"],
    rounds: 1,
    boundHit: false,
    ...(dryRun ? { declarations: composed.declarations.flatMap((d) => (d.ok ? [redactDeclaration(d.declaration)] : [])) } : {}),
  };
}

/**
 * For each verb, the replies its decide, answer or handler builds on the example mesh, as they go
 * on the wire. A Record over Verb: adding a verb to the contracts fails the type-check here until
 * its replies are produced. `replay` is served by the controller's shell over the records
 * themselves (it needs the bus): its replies are parsed by the typed client in the bus tests
 * (test/bus/contracts.test.ts, and every `mesh replay` of the CLI's tests).
 */
const REPLIES: Record<Verb, (state: State) => Promise<unknown[]> | unknown[] | "bus"> = {
  "node.enrol": (state) => [accept(state, "node.enrol", { node: "delta", publicKey: NODE_KEY, nkey: nodeNkeyOf("delta") }).wire],
  "node.remove": (state) => [accept(state, "node.remove", { node: "gamma" }).wire],
  "module.register": (state) => [
    accept(state, "module.register", { manifest: { name: "extra", version: "1.0.0", seats: { "mesh-extra": { protocol: "x/1" } }, claims: ["mesh-extra"], uses: ["mesh-build"] } }).wire,
    // Registered again as it is: accepted unchanged.
    accept(state, "module.register", { manifest: { name: "broker", version: "2.9.10", run: { image: "nats:2.9" }, seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] } }).wire,
    // A new version of a module: `replaced` names the old one.
    accept(state, "module.register", { manifest: { name: "broker", version: "2.10.0", run: { image: "nats:2.10" }, seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] } }).wire,
  ],
  "module.issue": (state) => [accept(state, "module.issue", { module: "mesh-controller" }).wire],
  "module.retire": (state) => {
    const registered = accept(state, "module.register", { manifest: { name: "extra", version: "1.0.0" } }).after;
    const issued = accept(registered, "module.issue", { module: "extra" }).after;
    const retired = accept(issued, "module.retire", { module: "extra" });
    // Retired again: accepted unchanged.
    return [retired.wire, accept(retired.after, "module.retire", { module: "extra" }).wire];
  },
  assign: (state) => [accept(state, "assign", { module: "npm-registry", node: "beta" }).wire],
  unassign: (state) => [accept(state, "unassign", { module: "showcase", node: "gamma" }).wire],
  "seat.alias": (state) => [accept(state, "seat.alias", { from: "old-build", to: "mesh-build" }).wire],
  "seat.handover": (state) => [accept(state, "seat.handover", { seat: "mesh-build", from: "beta", to: "gamma" }).wire],
  "overlay.place": (state) => {
    const enrolled = accept(state, "node.enrol", { node: "delta", publicKey: NODE_KEY, nkey: nodeNkeyOf("delta") }).after;
    return [accept(enrolled, "overlay.place", { node: "delta" }).wire];
  },
  "credential.rotate": (state) => [
    accept(state, "credential.rotate", { kind: "node", name: "alpha", nkey: nodeNkeyOf("alpha, rotated") }).wire,
    // The asking operator's own: its new password comes back to it (R50).
    accept(state, "credential.rotate", { kind: "operator", name: "ada" }).wire,
    accept(state, "credential.rotate", { kind: "module", name: "broker" }).wire,
  ],
  where: (state) => [ask(state, "where"), ask(state, "where", {}, { limit: 1 })],
  seats: (state) => [ask(state, "seats"), ask(state, "seats", {}, { limit: 1 })],
  nodes: (state) => [ask(state, "nodes"), ask(state, "nodes", {}, { limit: 1 })],
  modules: (state) => [ask(state, "modules"), ask(state, "modules", {}, { limit: 1 })],
  credentials: (state) => [ask(state, "credentials"), ask(state, "credentials", {}, { limit: 1 })],
  pushes: () => {
    const { commits } = exampleMesh();
    const meta = { actor: "operator-ada", at: NOW };
    const sent = { sequence: commits.length + 1, commit: { commandId: "push-1-sent-0-0", entity: { kind: "push" as const, id: "push-1" }, events: [{ ...meta, commandId: "push-1-sent-0-0", type: "DeclarationSent" as const, node: "alpha", digest: "d1", recordsSequence: commits.length }] } };
    const answered = queries.pushes!.fromCommits!.answer([...commits, sent], { limit: 5 });
    assert.ok(!(answered instanceof QueryRefused));
    return [stamped(queryReply(sent.sequence, spread(answered))), stamped(queryReply(commits.length, spread(queries.pushes!.fromCommits!.answer(commits, { limit: 5 }))))];
  },
  history: () => {
    const { commits } = exampleMesh();
    const def = queries.history!;
    const answered = def.fromCommits!.answer(commits, { kind: "node", id: "alpha" });
    assert.ok(!(answered instanceof QueryRefused));
    return [stamped(queryReply(commits.length, spread(withoutSecrets(answered))))];
  },
  explain: (state) => [
    ask(state, "explain", { kind: "module", name: "showcase" }),
    ask(state, "explain", { kind: "module", name: "showcase", direction: "pub", subject: "mesh.work.mesh-build.build" }),
    ask(state, "explain", { kind: "node", name: "alpha", direction: "sub", subject: "nothing.here" }),
    // Without composition settings lent, the answer says what it assumed.
    stamped(queryReply(state.sequence, spread(queries.explain!.answer(state, { kind: "controller", name: "mesh-controller" })))),
  ],
  push: async (state) => {
    const log = { info: () => undefined, error: () => undefined };
    const replies: unknown[] = [];
    for (const dryRun of [false, true]) {
      const verb = pushVerb(async () => pushReport(state, dryRun), log);
      replies.push(stamped(await askShell("push", verb, { dryRun }, ASKER)));
    }
    // Cut to fit a small max payload (R59): `omitted` says what was left out.
    const small = pushVerb(async () => pushReport(state, true), log, undefined, undefined, () => 4096);
    replies.push(stamped(await askShell("push", small, { dryRun: true }, ASKER)));
    return replies;
  },
  reports: async (state) => {
    const manager = fakeReports({
      alpha: { v: 1, node: "alpha", digest: "d1", ok: true, drift: ["modules/x/env"] },
      beta: { node: "beta", digest: "d2", ok: false, error: "disk full", missingParts: [1] },
    });
    const verb = reportsVerb(manager, async () => state.nodes);
    return [stamped(await askShell("reports", verb, { nodes: ["alpha", "beta", "gamma"] }, ASKER)), stamped(await askShell("reports", verb, { limit: 1 }, ASKER))];
  },
  replay: () => "bus",
};

describe("contracts: every verb has a request and a reply contract", () => {
  it("the command registry and the shell's verbs are exactly the contracts' verbs, each parsing requests with its contract", () => {
    const served = [...Object.keys(commands), ...Object.keys(queries), PUSH_VERB, REPORTS_VERB, REPLAY_VERB].sort();
    assert.deepEqual(Object.keys(VERBS).sort(), served);
    for (const verb of Object.keys(commands)) {
      assert.ok(isVerb(verb));
      assert.equal(VERBS[verb].kind, "command", verb);
      assert.equal(commands[verb]!.schema, VERBS[verb].request, `${verb} parses its requests with the contract itself`);
    }
    for (const verb of Object.keys(queries)) {
      assert.ok(isVerb(verb));
      assert.equal(VERBS[verb].kind, "query", verb);
      assert.equal(queries[verb]!.schema, VERBS[verb].request, `${verb} parses its requests with the contract itself`);
    }
    for (const verb of [PUSH_VERB, REPORTS_VERB, REPLAY_VERB]) {
      assert.ok(isVerb(verb));
      assert.equal(VERBS[verb].kind, "shell", verb);
    }
  });

  it("every accepted reply a decide, answer or handler builds parses with its verb's contract (every verb)", async () => {
    const { state } = exampleMesh();
    let checked = 0;
    for (const verb of Object.keys(VERBS) as Verb[]) {
      const replies = await REPLIES[verb](state);
      if (replies === "bus") continue;
      assert.ok(replies.length > 0, verb);
      for (const wire of replies) {
        let parsed: unknown;
        try {
          parsed = parseReply(verb, wire);
        } catch (error) {
          assert.fail(`${verb}: ${error instanceof Error ? error.message : String(error)}\n${JSON.stringify(wire).slice(0, 2000)}`);
        }
        assert.deepEqual(parsed, wire, `${verb}: the contract keeps every field of the reply`);
        checked += 1;
      }
    }
    assert.ok(checked >= 30, `${checked} replies checked`);
  });

  it("a refusal and a dry run parse with their contracts, for every command verb", () => {
    const { state } = exampleMesh();
    const deps = { sealSecret: (p: string) => `sealed(${p})`, newId: () => "id" } as unknown as ServeDependencies;
    for (const verb of Object.keys(commands)) {
      assert.ok(isVerb(verb));
      const refused = stamped({ ok: false, error: { code: "unknown-node", message: "no such node", field: "node" } });
      assert.deepEqual(parseReply(verb, refused), refused);
    }
    const dry = stamped(dryRunOf(state, commands["node.enrol"]!, { node: "delta", publicKey: NODE_KEY, nkey: nodeNkeyOf("delta") }, envelope("dry"), deps));
    assert.deepEqual(parseReply("node.enrol", dry, true), dry);
    const unchanged = stamped(dryRunOf(state, commands["module.register"]!, { manifest: { name: "broker", version: "2.9.10", run: { image: "nats:2.9" }, seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] } }, envelope("dry2"), deps));
    assert.deepEqual(parseReply("module.register", unchanged, true), unchanged);
  });

  it("a reply missing a field of its contract is refused naming the field (bad-message)", () => {
    const { state } = exampleMesh();
    const wire = ask(state, "nodes") as { nodes: Array<Record<string, unknown>> };
    const { modules: _dropped, ...withoutModules } = wire.nodes[0]!;
    assert.throws(() => parseReply("nodes", { ...wire, nodes: [withoutModules] }), (error: unknown) =>
      error instanceof ContractError && error.code === "bad-message" && error.field === "nodes.0.modules");
  });
});

describe("contracts: a peer of another version is refused naming v", () => {
  const other = CONTRACT_VERSIONS.verbs + 1;

  it("the client refuses a reply of another version (unsupported-version, field v)", () => {
    const { state } = exampleMesh();
    const wire = { ...(ask(state, "nodes") as object), v: other };
    assert.throws(() => parseReply("nodes", wire), (error: unknown) =>
      error instanceof ContractError && error.code === "unsupported-version" && error.field === "v" && error.seam === "verbs");
    assert.throws(() => parseReply("node.enrol", { ok: false, v: other, error: { code: "x", message: "m" } }), (error: unknown) =>
      error instanceof ContractError && error.code === "unsupported-version");
  });

  it("the controller refuses a request of another version before anything else (unsupported-version, field v)", async () => {
    const deps = { log: { info: () => undefined, error: () => undefined } } as unknown as ServeDependencies;
    for (const verb of ["node.enrol", "nodes", "explain"]) {
      const body = new TextEncoder().encode(JSON.stringify({ v: other, node: "x" }));
      // Refused before the catalogue or the bus is touched: neither is lent here.
      const reply = await handleCommand(null as never, null as never, deps, verb, body, ASKER);
      assert.equal(reply.ok, false);
      assert.ok(!reply.ok);
      assert.equal(reply.error.code, "unsupported-version");
      assert.equal(reply.error.field, "v");
    }
    assert.equal(versionRefusal("verbs", { v: 1 }), null);
    assert.equal(versionRefusal("verbs", {}), null, "a request without v is version 1 (written before the contracts)");
  });

  it("a host refuses a declaration of another version, and the controller a host's report of another version", () => {
    const { state } = exampleMesh();
    const composed = composeDeclarations(state, EXAMPLE_CONFIG, sha256).declarations.find((d) => d.ok);
    assert.ok(composed?.ok);
    assert.equal(composed.declaration.v, CONTRACT_VERSIONS.declaration, "compose stamps the declaration's version");
    assert.deepEqual(parseDeclaration(composed.declaration), composed.declaration);
    assert.throws(() => parseDeclaration({ ...composed.declaration, v: CONTRACT_VERSIONS.declaration + 1 }), (error: unknown) =>
      error instanceof ContractError && error.code === "unsupported-version" && error.field === "v" && error.seam === "declaration");
    const parsed = Declaration.safeParse({ ...composed.declaration, v: CONTRACT_VERSIONS.declaration + 1 });
    assert.ok(!parsed.success);
    assert.match(declarationProblem(parsed.error), /"v"/, "the node's report names the field");

    const report = { v: CONTRACT_VERSIONS.report, node: "alpha", digest: "d", ok: true };
    assert.deepEqual(parseHostReport(report), report);
    assert.deepEqual(parseHostReport({ node: "alpha", digest: "d", ok: true }), { node: "alpha", digest: "d", ok: true }, "a report without v (stored before the contracts) is version 1");
    assert.throws(() => parseHostReport({ ...report, v: CONTRACT_VERSIONS.report + 1 }), (error: unknown) =>
      error instanceof ContractError && error.code === "unsupported-version" && error.field === "v" && error.seam === "report");
  });

  it("R43: the controller's records tag is an optional field of version 1 of both contracts: a declaration or report from before it existed reads as before, one with it keeps it", () => {
    assert.equal(CONTRACT_VERSIONS.declaration, 1);
    assert.equal(CONTRACT_VERSIONS.report, 1);
    const { state } = exampleMesh();
    const composed = composeDeclarations(state, EXAMPLE_CONFIG, sha256).declarations.find((d) => d.ok);
    assert.ok(composed?.ok);
    const sent = { ...composed.declaration, recordsSequence: 7 };
    assert.deepEqual(parseDeclaration(sent), sent, "as push sent it before the tag");
    const { v: _v, ...unversioned } = sent;
    assert.deepEqual(parseDeclaration(unversioned).recordsTag, undefined, "as a host saved it before the contracts");
    assert.equal(parseDeclaration({ ...sent, recordsTag: "t".repeat(43) }).recordsTag, "t".repeat(43));
    const before = { node: "alpha", digest: "d", ok: true, recordsSequence: 7 };
    assert.deepEqual(parseHostReport(before), before, "a report stored before the tag");
    assert.deepEqual(parseHostReport({ ...before, v: 1, recordsTag: "t".repeat(43) }), { ...before, v: 1, recordsTag: "t".repeat(43) });
    assert.throws(() => parseHostReport({ ...before, recordsTag: 12 }), (error: unknown) => error instanceof ContractError && error.field === "recordsTag");
  });
});

describe("contracts: one definition per message", () => {
  it("the registry's verbs resolve to their contract's request schema (no second schema beside it)", () => {
    for (const verb of Object.keys(VERBS)) {
      const def = definitionOf(verb);
      if (def !== undefined) assert.equal(def.schema, VERBS[verb as Verb].request, verb);
    }
  });
});
