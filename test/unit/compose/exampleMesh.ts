/**
 * The example mesh of the compose tests, built the only way a state is built: by folding
 * hand-made commits with `evolve`. Mirrors the example of issue 3 (broker, store, build machine,
 * node-scoped packet filter, git / npm / artifacts sharing names with their provisions, and a
 * showcase that uses mesh-build, follows its `built` and offers a tool), plus the controller's own
 * module claiming the-controller.
 *
 * Every principal gets a real nkey key pair (R63; ed25519, cheap): its public key in the records,
 * its seed returned by bus user (`secrets`) for clients to dial with. Given `hash`, credentials are
 * minted as before nkeys instead (a password and its bcrypt hash, `hash(password)`): the transition.
 */
import { createUser } from "@nats-io/nkeys";
import { evolve, initialState, type State, type SequencedCommit } from "../../../src/projections/index.ts";
import type { Commit, MeshEvent } from "../../../src/events/index.ts";
import { Manifest } from "../../../src/manifest/manifest.ts";
import { CONTROLLER_NAME, busUser, type PrincipalKind } from "../../../src/names.ts";

export const FINGERPRINT = Array.from({ length: 32 }, (_, i) => (i * 7 % 256).toString(16).padStart(2, "0").toUpperCase()).join(":");
export const AT = "2026-01-01T00:00:00.000Z";

export const manifests = {
  broker: { name: "broker", version: "2.9.10", run: { image: "nats:2.9" }, seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] },
  store: { name: "store", version: "16", run: { image: "postgres:16" }, seats: { "mesh-store": { protocol: "postgres", provides: "database" } }, claims: ["mesh-store"] },
  "build-machine": {
    name: "build-machine", version: "1.0.0", run: { command: ["builder"] },
    seats: { "mesh-build": { protocol: "mesh-build/1", accepts: ["build"], emits: ["built"] } }, claims: ["mesh-build"],
  },
  "packet-filter": { name: "packet-filter", version: "1.0.0", seats: { "packet-filter": { protocol: "", scope: "node" } }, claims: ["packet-filter"] },
  "git-server": { name: "git-server", version: "1.0.0", seats: { git: { protocol: "git", provides: "git" } }, claims: ["git"] },
  "npm-registry": { name: "npm-registry", version: "1.0.0", seats: { npm: { protocol: "npm", provides: "npm" } }, claims: ["npm"] },
  "artifact-store": {
    name: "artifact-store", version: "1.0.0",
    seats: { artifacts: { protocol: "s3", provides: "artifacts", accepts: ["store"], emits: ["stored"] } }, claims: ["artifacts"],
  },
  showcase: {
    name: "showcase", version: "0.1.0", run: { image: "showcase:0.1" },
    uses: ["mesh-build", "git"], follows: [{ seat: "mesh-build", event: "built" }], tools: [{ name: "hello", description: "says hello" }],
  },
  [CONTROLLER_NAME]: { name: CONTROLLER_NAME, version: "0.1.0", seats: { "the-controller": { protocol: "mesh-command/1" } }, claims: ["the-controller"] },
} as const;

export type ExampleMesh = { state: State; secrets: Record<string, string>; commits: SequencedCommit[] };

/** The seats the controller submits to in the example (the configuration's default, R19). */
export const EXAMPLE_CONFIG = { controllerSubmits: ["mesh-build"] } as const;

/** Builds commits from event bodies (meta filled in) and folds them; returns the builder for more. */
export class MeshBuilder {
  commits: SequencedCommit[] = [];
  /** Each bus user's secret: its nkey seed, or its password when built with `hash`. */
  secrets: Record<string, string> = {};
  constructor(private readonly hash?: (password: string) => string) {}

  commit(kind: string, id: string, ...events: Array<Record<string, unknown> & { type: MeshEvent["type"] }>): this {
    const commandId = `cmd-${this.commits.length + 1}`;
    const full = events.map((e) => ({ actor: "test", commandId, at: AT, ...e })) as unknown as MeshEvent[];
    const commit: Commit = { commandId, entity: { kind, id }, events: full };
    this.commits.push({ sequence: this.commits.length + 1, commit });
    return this;
  }
  credential(kind: PrincipalKind, name: string, address = "tls://bus.example.net:4222"): Record<string, unknown> & { type: "CredentialMinted" } {
    const user = busUser(kind, name);
    if (this.hash) {
      const password = `pw-${user}`;
      this.secrets[user] = password;
      return { type: "CredentialMinted", principal: { kind, name }, user, hash: this.hash(password), sealed: `sealed:${user}`, address };
    }
    const pair = keyOf(user);
    this.secrets[user] = pair.seed;
    // A node's key is generated on the node (R64): the records hold its public key and no secret.
    return { type: "CredentialMinted", principal: { kind, name }, user, nkey: pair.publicKey, ...(kind === "node" ? {} : { sealed: `sealed:${user}` }), address };
  }
  genesis(): this {
    return this.commit("mesh", "mesh", { type: "MeshCreated", genesisAddress: "tls://bus.example.net:4222", fingerprint: FINGERPRINT, bootstrapUser: busUser("controller", CONTROLLER_NAME) });
  }
  controller(): this { return this.commit("controller", CONTROLLER_NAME, this.credential("controller", CONTROLLER_NAME)); }
  operator(name: string): this { return this.commit("operator", name, this.credential("operator", name)); }
  builder(name: string): this { return this.commit("builder", name, this.credential("builder", name)); }
  node(name: string, withCredential = true): this {
    const events: Array<Record<string, unknown> & { type: MeshEvent["type"] }> = [{ type: "NodeEnrolled", node: name, publicKey: `pk-${name}` }];
    if (withCredential) events.push(this.credential("node", name));
    return this.commit("node", name, ...events);
  }
  register(manifest: unknown): this {
    return this.commit("module", (manifest as { name: string }).name, { type: "ModuleRegistered", manifest: Manifest.parse(manifest) });
  }
  issue(module: string, withCredential = true): this {
    const events: Array<Record<string, unknown> & { type: MeshEvent["type"] }> = [{ type: "ModuleIssued", module }];
    if (withCredential) events.push(this.credential("module", module));
    return this.commit("module", module, ...events);
  }
  assign(module: string, node: string): this { return this.commit("module", module, { type: "ModuleAssigned", module, node }); }
  provision(seat: string, provision: string, consumer: string): this {
    return this.commit("provision", `${seat}-${consumer}`, { type: "ProvisionMinted", seat, provision, consumer, user: `${provision}-${consumer}`, sealed: `sealed:${provision}-${consumer}` });
  }
  place(node: string, hub = false): this { return this.commit("node", node, { type: "OverlayPlaced", node, hub, overlayName: `${node}.internal` }); }
  alias(from: string, to: string): this { return this.commit("seat", from, { type: "SeatAliased", from, to }); }
  state(): State { return evolve(initialState, this.commits); }
}

/**
 * One key pair per bus user for the whole test process: two example meshes built alike hold the
 * same records (compose is compared across builds), as they did when passwords were `pw-<user>`.
 */
const keys = new Map<string, { seed: string; publicKey: string }>();
function keyOf(user: string): { seed: string; publicKey: string } {
  let pair = keys.get(user);
  if (!pair) {
    const made = createUser();
    pair = { seed: new TextDecoder().decode(made.getSeed()), publicKey: made.getPublicKey() };
    keys.set(user, pair);
  }
  return pair;
}

/** A bcrypt-shaped stand-in for unit tests (compose never checks a hash). */
export function fakeHash(password: string): string {
  return `$2a$06$${password.padEnd(53, "x").slice(0, 53)}`;
}

/**
 * The example mesh: controller, one operator, one builder, nodes alpha (broker, store,
 * mesh-controller), beta (build-machine, packet-filter, git-server) and gamma (showcase,
 * packet-filter, artifact-store); npm-registry registered and issued but not assigned.
 */
export function exampleMesh(hash?: (password: string) => string): ExampleMesh {
  const b = new MeshBuilder(hash).genesis().controller().operator("ada").builder("ci");
  for (const node of ["alpha", "beta", "gamma"]) b.node(node);
  for (const manifest of Object.values(manifests)) b.register(manifest);
  for (const module of Object.keys(manifests)) if (module !== CONTROLLER_NAME) b.issue(module);
  b.assign("broker", "alpha").assign("store", "alpha").assign(CONTROLLER_NAME, "alpha")
    .assign("build-machine", "beta").assign("packet-filter", "beta").assign("git-server", "beta")
    .assign("showcase", "gamma").assign("packet-filter", "gamma").assign("artifact-store", "gamma")
    .provision("git", "git", "showcase")
    .place("alpha", true).place("beta").place("gamma");
  return { state: b.state(), secrets: b.secrets, commits: b.commits };
}
