import { createHash } from "node:crypto";
/**
 * given/when/then for the pure command core, no server: `given(...events)` folds events into a
 * state, `.when(verb, request, envelope?)` validates the request with the verb's schema and runs its
 * decide, and the outcome is checked with `.then(events)` or `.refused(code, field?)`.
 *
 *   given(GENESIS).when("node.enrol", { node: "alpha", publicKey: NODE_KEY }).then([...])
 *
 * `.then` also holds every decided event to its zod schema, checks decide left the state as it was,
 * and that decide took no more fresh secrets than the verb's `secretsNeeded` said. `.unchanged()`
 * asserts "accepted, no events" (nothing to append).
 */
import assert from "node:assert/strict";
import { MeshEvent, type Commit, type Entity } from "../../src/events/index.ts";
import { evolve, initialState, type State } from "../../src/projections/index.ts";
import { Manifest } from "../../src/manifest/manifest.ts";
import { busUser } from "../../src/names.ts";
import { commands, queries, parseRequest, metaOf } from "../../src/commands/index.ts";
import type { Decision, Envelope, FreshSecret, ReplyTools } from "../../src/commands/index.ts";

/** An event without the meta its command's envelope adds. */
export type EventBody = MeshEvent extends infer E ? (E extends MeshEvent ? Omit<E, "actor" | "commandId" | "at"> : never) : never;

export const NOW = "2026-01-01T00:00:00.000Z";
export const FINGERPRINT = Array(32).fill("AB").join(":");
export const GENESIS_ADDRESS = "tls://bus.example:4443";
/** A real X25519 public key, base64 SPKI DER. */
export const NODE_KEY = "MCowBQYDK2VuAyEAMp1bbDgAW2GGM+gtGSuYsstZQ6UtQwqGCOy9UI5MK1w=";

/** A public key of `node`'s own (base64, distinct per name): each node enrols with its own key. */
export function nodeKeyOf(node: string): string {
  return Buffer.from(`public key of ${node}`).toString("base64");
}

/**
 * An nkey public key of `node`'s own (`U` + 55 base32 characters, distinct per name): what `mesh
 * host init` generates on the node (R64). Decide checks only its shape.
 */
export function nodeNkeyOf(node: string): string {
  return `U${[...createHash("sha256").update(node).digest("hex").slice(0, 55)].map((c) => "ABCDEFGHIJKLMNOP"[parseInt(c, 16)]).join("")}`;
}

/** The nkey of the node enrolled as "alpha" in these tests. */
export const NODE_NKEY = nodeNkeyOf("alpha");

/**
 * Fake fresh secret #n: an nkey-shaped seed (`SU` + 56) and public key (`U` + 55, base32 letters
 * spelling n), sealed `sealed-n`. Decide never checks that the key belongs to the seed.
 */
export function fakeSecret(n: number): FreshSecret {
  const spelled = String(n).replace(/\d/g, (d) => "ABCDEFGHIJ"[Number(d)]!);
  return { seed: `SU${`SEED${spelled}`.padEnd(56, "A")}`, nkey: `U${`KEY${spelled}`.padEnd(55, "A")}`, sealed: `sealed-${n}` };
}

/** The envelope `when` uses unless given one: fixed time, command id and actor, three fake secrets. */
export const DEFAULT_ENVELOPE: Envelope = { commandId: "cmd-when", actor: "operator-alice", now: NOW, secrets: [1, 2, 3].map(fakeSecret) };

/** Fake reply tools: "opening" and "sealing" are visible string wrappers, so tests can see what was sealed to whom. */
export const FAKE_TOOLS: ReplyTools = {
  openSecret: (sealed) => `opened(${sealed})`,
  sealToNode: (publicKey, secret) => `sealed-to(${publicKey.slice(0, 8)}):${secret.length}`,
};

export const GENESIS: EventBody = {
  type: "MeshCreated",
  genesisAddress: GENESIS_ADDRESS,
  fingerprint: FINGERPRINT,
  bootstrapUser: busUser("controller", "mesh-controller"),
};

/**
 * The events an accepted `node.enrol {node, publicKey: NODE_KEY, nkey: nodeNkeyOf(node)}` leaves
 * (minted for the genesis address; the node's own key, no sealed secret, R64).
 */
export function enrolment(node: string): EventBody[] {
  return [
    { type: "NodeEnrolled", node, publicKey: NODE_KEY },
    { type: "CredentialMinted", principal: { kind: "node", name: node }, user: busUser("node", node), nkey: nodeNkeyOf(node), address: GENESIS_ADDRESS },
  ];
}

/** The body of `node.enrol` for `node` as these tests send it (NODE_KEY and the node's own nkey). */
export function enrolBody(node: string, publicKey: string = NODE_KEY): { node: string; publicKey: string; nkey: string } {
  return { node, publicKey, nkey: nodeNkeyOf(node) };
}

/** A ModuleRegistered event for a manifest written as plain JSON (parsed, defaults filled in). */
export function registration(manifest: unknown): EventBody {
  return { type: "ModuleRegistered", manifest: Manifest.parse(manifest) };
}

/** Folds event bodies, one commit each, into a state. */
export function stateOf(events: readonly EventBody[]): State {
  const commits = events.map((event, i) => {
    const commit: Commit = {
      commandId: `given-${i + 1}`,
      entity: { kind: "test", id: "given" },
      events: [MeshEvent.parse({ actor: "operator-given", commandId: `given-${i + 1}`, at: NOW, ...event })],
    };
    return { sequence: i + 1, commit };
  });
  return evolve(initialState, commits);
}

/** The outcome of one command: assert it with `then` or `refused`, or read the reply. */
export type Outcome = {
  decision: Decision;
  /** The decided events must equal `expected` (each with the envelope's meta); `entity` too, when given. */
  then(expected: readonly EventBody[], entity?: Entity): void;
  /**
   * The command must be accepted with no events: the records already say it (`unchanged`), so
   * nothing is appended; `entity` too, when given.
   */
  unchanged(entity?: Entity): void;
  /** The command must be refused with `code` (and `field`, when given). */
  refused(code: string, field?: string): void;
  /** The reply to an accepted command, from the state after its commit (fake tools unless given). */
  reply(tools?: ReplyTools): unknown;
  /** The state after the commit (asserts the command was accepted). */
  after(): State;
};

export type Scenario = {
  state: State;
  when(verb: string, request: unknown, envelope?: Envelope): Outcome;
  /** A query's answer over this state (the request validated by its schema). */
  query(verb: string, request?: unknown): unknown;
};

function describe(decision: Decision): string {
  if (decision.ok && decision.unchanged) return "accepted unchanged (no events)";
  return decision.ok ? `accepted: ${decision.events.map((e) => e.type).join(", ")}` : `refused ${decision.refusal.code}: ${decision.refusal.message}`;
}

/** Starts a scenario from the records `events` leave. */
export function given(...events: EventBody[]): Scenario {
  return scenarioOf(stateOf(events));
}

function scenarioOf(state: State): Scenario {
  return {
    state,
    when(verb, request, envelope = DEFAULT_ENVELOPE) {
      const definition = commands[verb];
      if (!definition) throw new Error(`no command verb "${verb}" in the registry`);
      const before = JSON.stringify(state);
      const parsed = parseRequest(definition.schema, request);
      let decision: Decision;
      if (!parsed.ok) {
        decision = { ok: false, refusal: parsed.refusal };
      } else {
        const needed = definition.secretsNeeded(state, parsed.value);
        decision = definition.decide(state, parsed.value, { ...envelope, secrets: envelope.secrets.slice(0, needed) });
      }
      assert.equal(JSON.stringify(state), before, "decide must leave the state it was given as it was");
      const after = (): State => {
        assert.ok(decision.ok, describe(decision));
        if (decision.unchanged) return state;
        return evolve(state, [{ sequence: state.sequence + 1, commit: { commandId: envelope.commandId, entity: decision.entity, events: decision.events } }]);
      };
      return {
        decision,
        then(expected, entity) {
          assert.ok(decision.ok && !decision.unchanged, `expected events, got ${describe(decision)}`);
          for (const event of decision.events) MeshEvent.parse(event);
          const meta = metaOf(envelope);
          assert.deepEqual(decision.events, expected.map((e) => ({ ...meta, ...e })));
          if (entity) assert.deepEqual(decision.entity, entity);
        },
        unchanged(entity) {
          assert.ok(decision.ok && decision.unchanged === true, `expected unchanged (no events), got ${describe(decision)}`);
          assert.deepEqual(decision.events, []);
          if (entity) assert.deepEqual(decision.entity, entity);
        },
        refused(code, field) {
          assert.ok(!decision.ok, `expected refusal ${code}, got ${describe(decision)}`);
          assert.equal(decision.refusal.code, code, decision.refusal.message);
          if (field !== undefined) assert.equal(decision.refusal.field, field, decision.refusal.message);
        },
        reply(tools = FAKE_TOOLS) {
          const next = after();
          assert.ok(decision.ok);
          assert.ok(parsed.ok);
          return definition.reply(next, decision.events, tools, decision.entity, parsed.value);
        },
        after,
      };
    },
    query(verb, request = {}) {
      const definition = queries[verb];
      if (!definition) throw new Error(`no query verb "${verb}" in the registry`);
      const parsed = parseRequest(definition.schema, request);
      assert.ok(parsed.ok, parsed.ok ? "" : parsed.refusal.message);
      return definition.answer(state, parsed.value);
    },
  };
}

/** Continues a scenario from a prepared state (for instance an accepted outcome's `after()`). */
export function givenState(state: State): Scenario {
  return scenarioOf(state);
}
