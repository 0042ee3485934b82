/**
 * A generator of a realistic, valid history of commits, deterministic from a seed, for tests and
 * benches. It covers every event type in its first commits (a "tour"), then churns a bounded mesh:
 * nodes enrol and leave, modules register and move, credentials rotate, pushes send declarations.
 * Every commit passes the zod `Commit` schema. Not pure code: it builds ISO times with Date.
 */
import type { Commit, MeshEvent, MeshEventType } from "../../src/events/index.ts";
import type { Manifest } from "../../src/manifest/manifest.ts";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, type PubAck } from "@nats-io/jetstream";
import { BROKER_SEAT, CONTROLLER_NAME, CONTROLLER_SEAT, RECORDS_ENTITY, STORE_SEAT, busUser, catalogueSubject, overlayName, type PrincipalKind } from "../../src/names.ts";

export type HistoryOptions = {
  /** Same seed, same history. */
  seed: number;
  /** Stop once at least this many events were generated (the last commit may overshoot a little). */
  events: number;
  /** Command ids are `<prefix>-<n>` (default `h<seed>`). */
  prefix?: string;
  /** The mesh never holds more nodes than this (default 500). */
  maxNodes?: number;
};

/**
 * Every event type, one key each: a type the union gains and this list lacks fails the typecheck
 * (the list is meant to be complete; tests check a history covers it all).
 */
const EVERY_EVENT_TYPE: Record<MeshEventType, true> = {
  MeshCreated: true, NodeEnrolled: true, NodeRemoved: true, CredentialMinted: true, CredentialRotated: true, CredentialRevoked: true,
  ModuleRegistered: true, ModuleIssued: true, ModuleAssigned: true, ModuleUnassigned: true, ModuleRetired: true, SeatAliased: true, SeatHandedOver: true,
  OverlayPlaced: true, ProvisionMinted: true, ProvisionRotated: true, DeclarationSent: true, CommitVoided: true, RecordsRestored: true,
};

/** Every event type, for tests that check a history covers them all. */
export const EVENT_TYPES: readonly MeshEventType[] = Object.keys(EVERY_EVENT_TYPE) as MeshEventType[];

/** mulberry32: a small, fast, seedable PRNG in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const BCRYPT_ALPHABET = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const BASE64_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HEX = "0123456789abcdef";
const START_MS = Date.UTC(2026, 0, 1);
const ADDRESS = "tls://bus.example.net:4443";

/** An event without the meta its commit fills in (Omit distributed over the union). */
type Body = MeshEvent extends infer E ? (E extends MeshEvent ? Omit<E, "actor" | "commandId" | "at"> : never) : never;

/** Yields the commits of a generated history, in order. */
export function* generateHistory(options: HistoryOptions): Generator<Commit> {
  const random = prng(options.seed);
  const prefix = options.prefix ?? `h${options.seed}`;
  const maxNodes = options.maxNodes ?? 500;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const text = (alphabet: string, length: number) => {
    let out = "";
    for (let i = 0; i < length; i += 1) out += alphabet[Math.floor(random() * alphabet.length)];
    return out;
  };

  // What the generator remembers of the mesh, to write plausible events.
  const nodes: string[] = [];
  const placed = new Set<string>();
  let hub: string | null = null;
  const modules = new Map<string, Manifest>();
  const issued = new Set<string>();
  const assigned = new Map<string, Set<string>>(); // module -> nodes
  const credentials = new Map<string, { kind: PrincipalKind; name: string }>();
  let nodeCounter = 0;
  let appCounter = 0;
  let builderCounter = 0;
  let aliasCounter = 0;
  let emitted = 0;
  let commitNumber = 0;

  const commit = (kind: string, id: string, bodies: Body[]): Commit => {
    commitNumber += 1;
    const commandId = `${prefix}-${commitNumber}`;
    const at = new Date(START_MS + commitNumber * 1000).toISOString();
    const meta = { actor: "operator-admin", commandId, at };
    emitted += bodies.length;
    return { commandId, entity: { kind, id }, events: bodies.map((body) => ({ ...meta, ...body }) as MeshEvent) };
  };
  const credential = (kind: PrincipalKind, name: string) => {
    credentials.set(`${kind}:${name}`, { kind, name });
    return {
      principal: { kind, name },
      user: busUser(kind, name),
      hash: `$2a$06$${text(BCRYPT_ALPHABET, 53)}`,
      sealed: text(BASE64_ALPHABET, 64),
      address: ADDRESS,
    };
  };
  const manifestOf = (name: string, version: number): Manifest => {
    if (name === CONTROLLER_NAME) {
      return { name, version: `${version}.0.0`, description: "the control plane", run: { image: "mesh/controller" },
        seats: { [CONTROLLER_SEAT]: { protocol: "mesh-command", accepts: [], emits: ["pushed"], scope: "mesh" } },
        claims: [CONTROLLER_SEAT], uses: [], follows: [], tools: [] };
    }
    if (name === "broker") {
      return { name, version: `${version}.0.0`, description: "", run: { image: "nats" },
        seats: { [BROKER_SEAT]: { protocol: "nats", accepts: [], emits: [], scope: "mesh" } },
        claims: [BROKER_SEAT], uses: [], follows: [], tools: [] };
    }
    if (name === "store") {
      return { name, version: `${version}.0.0`, description: "", run: { image: "postgres" },
        seats: { [STORE_SEAT]: { protocol: "postgres", accepts: ["backup"], emits: ["backed-up"], provides: "database", scope: "mesh" } },
        claims: [STORE_SEAT], uses: [], follows: [], tools: [{ name: "vacuum", description: "" }] };
    }
    if (name === "firewall") {
      return { name, version: `${version}.0.0`, description: "", run: { command: ["nft", "-f", "rules"] },
        seats: { "packet-filter": { protocol: "", accepts: [], emits: [], scope: "node" } },
        claims: ["packet-filter"], uses: [], follows: [], tools: [] };
    }
    if (name === "retiring") {
      return { name, version: `${version}.0.0`, description: "", run: {}, seats: {}, claims: [], uses: [], follows: [], tools: [] };
    }
    const n = Number(name.slice("app-".length));
    const seat = `svc-${n}`;
    return { name, version: `${version}.0.0`, description: `application ${n}`, run: { image: `registry/app-${n}:${version}` },
      seats: { [seat]: { protocol: "http", accepts: ["job"], emits: ["done"], scope: "mesh" } },
      claims: [seat], uses: [STORE_SEAT], follows: n > 1 ? [{ seat: `svc-${n - 1}`, event: "done" }] : [],
      tools: [{ name: "status", description: "" }] };
  };

  // ---- one generator per kind of command ----
  const enrol = (): Commit => {
    nodeCounter += 1;
    const node = `node-${nodeCounter}`;
    nodes.push(node);
    return commit("node", node, [
      { type: "NodeEnrolled", node, publicKey: text(BASE64_ALPHABET, 60) },
      { type: "CredentialMinted", ...credential("node", node) },
    ]);
  };
  const removeNode = (): Commit => {
    const index = Math.floor(random() * nodes.length);
    const node = nodes[index]!;
    nodes.splice(index, 1);
    placed.delete(node);
    if (hub === node) hub = null;
    credentials.delete(`node:${node}`);
    for (const set of assigned.values()) set.delete(node);
    return commit("node", node, [{ type: "NodeRemoved", node }]);
  };
  const place = (): Commit => {
    const node = pick(nodes);
    const asHub = hub === null;
    if (asHub) hub = node;
    placed.add(node);
    return commit("node", node, [{ type: "OverlayPlaced", node, hub: asHub, overlayName: overlayName(node) }]);
  };
  const register = (name: string): Commit => {
    const version = (modules.has(name) ? Number(modules.get(name)!.version.split(".")[0]) : 0) + 1;
    const manifest = manifestOf(name, version);
    modules.set(name, manifest);
    return commit("module", name, [{ type: "ModuleRegistered", manifest }]);
  };
  const registerSome = (): Commit => {
    if (appCounter < 40 && random() < 0.5) {
      appCounter += 1;
      return register(`app-${appCounter}`);
    }
    return register(pick([...modules.keys()]));
  };
  const issue = (): Commit => {
    const module = pick([...modules.keys()]);
    issued.add(module);
    return commit("module", module, [{ type: "ModuleIssued", module }, { type: "CredentialMinted", ...credential("module", module) }]);
  };
  const assign = (module = pick([...modules.keys()]), node = pick(nodes)): Commit => {
    (assigned.get(module) ?? assigned.set(module, new Set()).get(module)!).add(node);
    return commit("module", module, [{ type: "ModuleAssigned", module, node }]);
  };
  const unassign = (): Commit => {
    const candidates = [...assigned].filter(([, set]) => set.size > 0);
    if (candidates.length === 0) return assign();
    const [module, set] = pick(candidates);
    const node = pick([...set]);
    set.delete(node);
    return commit("module", module, [{ type: "ModuleUnassigned", module, node }]);
  };
  // A module registered for the purpose, never assigned or claimed: retiring it is always allowed.
  const retireModule = (name: string): Commit => {
    const version = modules.get(name)!.version;
    modules.delete(name);
    return commit("module", name, [{ type: "ModuleRetired", module: name, version }]);
  };
  const mintBuilder = (): Commit => {
    builderCounter += 1;
    const name = `builder-${builderCounter}`;
    return commit("builder", name, [{ type: "CredentialMinted", ...credential("builder", name) }]);
  };
  const rotate = (): Commit => {
    const { kind, name } = pick([...credentials.values()]);
    return commit(kind, name, [{ type: "CredentialRotated", ...credential(kind, name) }]);
  };
  const revoke = (): Commit => {
    const builders = [...credentials.values()].filter((p) => p.kind === "builder");
    if (builders.length === 0) return mintBuilder();
    const principal = pick(builders);
    credentials.delete(`${principal.kind}:${principal.name}`);
    return commit(principal.kind, principal.name, [{ type: "CredentialRevoked", principal }]);
  };
  const alias = (): Commit => {
    aliasCounter += 1;
    const to = pick([...modules.values()].flatMap((m) => Object.keys(m.seats)));
    return commit("seat", to, [{ type: "SeatAliased", from: `old-${to}-${aliasCounter}`, to }]);
  };
  const handOver = (): Commit => {
    const held = [...assigned].filter(([module, set]) => set.size > 0 && modules.get(module)!.claims.length > 0);
    if (held.length === 0 || nodes.length < 2) return assign();
    const [module, set] = pick(held);
    const from = pick([...set]);
    const to = pick(nodes.filter((n) => n !== from));
    set.delete(from);
    set.add(to);
    const seat = modules.get(module)!.claims[0]!;
    return commit("seat", seat, [
      { type: "SeatHandedOver", seat, from, to },
      { type: "ModuleUnassigned", module, node: from },
      { type: "ModuleAssigned", module, node: to },
    ]);
  };
  const provisioned = new Set<string>();
  const provision = (): Commit => {
    const users = [...modules.values()].filter((m) => m.uses.includes(STORE_SEAT));
    const consumer = users.length > 0 ? pick(users).name : CONTROLLER_NAME;
    provisioned.add(consumer);
    return commit("module", consumer, [{
      type: "ProvisionMinted", seat: STORE_SEAT, provision: "database", consumer,
      user: `db-${consumer}`, sealed: text(BASE64_ALPHABET, 64),
    }]);
  };
  const rotateProvision = (): Commit => {
    if (provisioned.size === 0) return provision();
    const consumer = pick([...provisioned]);
    return commit("module", consumer, [{
      type: "ProvisionRotated", seat: STORE_SEAT, provision: "database", consumer,
      user: `db-${consumer}`, sealed: text(BASE64_ALPHABET, 64),
    }]);
  };
  const send = (): Commit => {
    const node = pick(nodes);
    return commit("node", node, [{ type: "DeclarationSent", node, digest: text(HEX, 64), recordsSequence: commitNumber }]);
  };

  // The records' own commits (R44, R45): an accepted restore (its lost range past this commit) and
  // a void (of a commit that folds: a state no-op, as the fold skips only what it cannot read).
  const restored = (): Commit =>
    commit(RECORDS_ENTITY.kind, RECORDS_ENTITY.id, [{
      type: "RecordsRestored", evidence: [{ kind: "records-behind-mark", detail: "the records end before the mark" }],
      lost: { from: commitNumber + 2, to: commitNumber + 4 },
    }]);
  const voided = (): Commit =>
    commit(RECORDS_ENTITY.kind, RECORDS_ENTITY.id, [{ type: "CommitVoided", sequence: Math.max(1, commitNumber - 1), types: ["DeclarationSent"], reason: "a generated void" }]);

  // ---- the tour: genesis and one of every event type ----
  const tour: Array<() => Commit> = [
    () => commit("mesh", "mesh", [{
      type: "MeshCreated", genesisAddress: ADDRESS,
      fingerprint: Array.from({ length: 32 }, () => text(HEX, 2).toUpperCase()).join(":"),
      bootstrapUser: busUser("controller", CONTROLLER_NAME),
    }]),
    () => commit("controller", CONTROLLER_NAME, [{ type: "CredentialMinted", ...credential("controller", CONTROLLER_NAME) }]),
    () => register(CONTROLLER_NAME), () => register("broker"), () => register("store"), () => register("firewall"),
    enrol, enrol, enrol, place, place,
    () => assign("broker", nodes[0]), () => assign("store", nodes[1]), () => assign(CONTROLLER_NAME, nodes[0]),
    issue, () => register("app-0".replace("0", String(++appCounter))), provision, rotateProvision, mintBuilder, rotate, revoke, alias,
    handOver, unassign, send, removeNode, restored, voided, () => register("retiring"), () => retireModule("retiring"),
  ];
  for (const step of tour) {
    yield step();
    if (emitted >= options.events) return;
  }

  // ---- churn, weighted like a real mesh: mostly pushes ----
  const churn: Array<[number, () => Commit]> = [
    [30, send], [8, enrol], [3, removeNode], [4, place], [2, registerSome], [2, issue], [10, assign], [5, unassign],
    [4, rotate], [1, mintBuilder], [1, revoke], [1, alias], [2, handOver], [2, provision], [1, rotateProvision],
  ];
  const total = churn.reduce((sum, [weight]) => sum + weight, 0);
  while (emitted < options.events) {
    let roll = random() * total;
    let step = churn[0]![1];
    for (const [weight, candidate] of churn) {
      roll -= weight;
      if (roll < 0) { step = candidate; break; }
    }
    if (step === enrol && nodes.length >= maxNodes) step = send;
    if (step === removeNode && nodes.length <= 3) step = enrol;
    yield step();
  }
}

/** The whole history as an array (for tests; benches iterate the generator). */
export function generateCommits(options: HistoryOptions): Commit[] {
  return [...generateHistory(options)];
}

/**
 * Publishes commits as they are, in order, on their catalogue subjects with their command id as
 * Nats-Msg-Id and no fence: a fast way to lay down a history for tests and benches (many
 * publishes in flight; one connection keeps their order). Returns the last stream sequence.
 */
export async function publishCommits(nc: NatsConnection, commits: Iterable<Commit>, inFlight = 512): Promise<number> {
  const js = jetstream(nc);
  let last = 0;
  let pending: Array<Promise<PubAck>> = [];
  const settle = async () => {
    for (const ack of await Promise.all(pending)) last = Math.max(last, ack.seq);
    pending = [];
  };
  for (const commit of commits) {
    pending.push(js.publish(catalogueSubject(commit.entity.kind, commit.entity.id), JSON.stringify(commit), { msgID: commit.commandId }));
    if (pending.length >= inFlight) await settle();
  }
  await settle();
  return last;
}
