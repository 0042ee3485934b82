import type { State } from "../projections/index.ts";
import type { ModuleEnvironment } from "../contracts/declaration.ts";
import { holdersOf, moduleOf, overlayNameOf, provisionOf, resolveSeat, seatOf } from "../projections/index.ts";
import { jsonString } from "./digest.ts";
import { toolUseOf, usedSeats } from "../manifest/manifest.ts";
import { offersTool } from "./permissions.ts";
import { EVENTS_STREAM, eventSubject, followConsumer, inboxPrefix, toolSubject, workConsumer, workStream, workSubject } from "../names.ts";

/**
 * A module's environment (R57): everything it needs to use its seats, named by the same functions
 * of src/names.ts that grant them (R18), so what it is told and what the bus lets it do cannot
 * drift apart. Values are strings (an `env` file's `KEY=value` lines); the lists are JSON arrays on
 * one line, in the manifest's order, so a module in any language reads them with one parse.
 *
 * - `MESH_BROKER_ADDRESS`: `tls://host:port`, where its node reaches the broker (R7, R10);
 * - `MESH_BROKER_CERTIFICATE`: the mesh CA's SHA-256 fingerprint (R34, R71);
 * - `MESH_USER`: its bus user (the host adds `MESH_NKEY_SEED`, opened with the node's key, and
 *   `MESH_BROKER_CERTIFICATE_FILE`, the mesh CA's certificate as PEM: any standard client verifies
 *   the bus against it, names included, R71);
 * - `MESH_INBOX_PREFIX`: the only inbox it may use (R33): a client's default `_INBOX.` is refused;
 * - `MESH_WORK`: `[{seat, stream, consumer, subjects}]`, the shared work queue of each seat it
 *   claims that accepts work (R16), pulled from the durable consumer `consumer`;
 * - `MESH_SUBMITS`: `[{seat, kind, subject}]`, the work it may submit to the seats it uses;
 * - `MESH_EMITS`: `[{seat, event, subject}]`, the events of the seats it claims;
 * - `MESH_FOLLOWS`: `[{seat, event, subject, stream, consumer}]`, its follow consumers (R4);
 * - `MESH_TOOLS`: `[{tool, subject}]`, the requests it answers;
 * - `MESH_CALLS`: `[{module, tool, subject}]`, the tools of other modules it may call, one per
 *   `uses` entry `<module>/<tool>` whose module offers it (R74): a request on `subject`;
 * - `MESH_PROVISIONS`: `[{seat, provision, protocol, user, holders: [{node, address?}]}]`, each
 *   provision it consumes (R75): the login `user` made for it, and where the seat's holders are:
 *   each node with its overlay name as `address` (absent for a node off the overlay). The secret
 *   is in the file `MESH_PROVISIONS_FILE` names, which the host adds (`[{seat, provision, user, secret}]`).
 *   A provider is told the logins it must create in its own folder (`MESH_LOGINS_FILE`, added by the host).
 * Seats are named as they resolve now (aliases followed, R27). Pure.
 */
export type { ModuleEnvironment };

/** The variable the host adds: the path of the mesh CA's certificate as PEM (R57, R71). */
export const CERTIFICATE_FILE_VARIABLE = "MESH_BROKER_CERTIFICATE_FILE";
/** The variable the host adds: the path of the module's `provisions.json`, the secrets of the provisions it consumes (R75). */
export const PROVISIONS_FILE_VARIABLE = "MESH_PROVISIONS_FILE";
/** The variable the host adds: the path of a provider's `logins.json`, the logins it must create with their secrets (R75). */
export const LOGINS_FILE_VARIABLE = "MESH_LOGINS_FILE";
/** The variable the host adds: the module's password (a credential from before nkeys), opened with the node's key (R3: only in the 0600 env file). */
export const PASSWORD_VARIABLE = "MESH_PASSWORD";
/**
 * The variable the host adds: the module's nkey seed (R63), opened with the node's key (R3: only
 * in the 0600 env file). A standard client signs the bus's nonce with it (nats.go `nats.Nkey`,
 * nats-py `nkeys_seed_str`, the nats CLI's `--nkey` file: the module's credential.json beside it).
 */
export const SEED_VARIABLE = "MESH_NKEY_SEED";

/** Work a module pulls: one entry per claimed seat that accepts work. */
export type WorkEntry = { seat: string; stream: string; consumer: string; subjects: string[] };
/** Work a module may submit. */
export type SubmitEntry = { seat: string; kind: string; subject: string };
/** An event a module announces. */
export type EmitEntry = { seat: string; event: string; subject: string };
/** An event a module follows, through its own durable pull consumer on EVENTS. */
export type FollowEntry = { seat: string; event: string; subject: string; stream: string; consumer: string };
/** A request a module answers. */
export type ToolEntry = { tool: string; subject: string };
/** Another module's tool a module may call (R74). */
export type CallEntry = { module: string; tool: string; subject: string };

/**
 * The environment's lists are written as text, entry by entry, with the bytes JSON.stringify writes
 * for the entries (WorkEntry, ... with their members in the order the types list them): composing
 * 10,000 nodes built 40,000 modules' entry objects only to stringify them.
 */
function workEntry(seat: string, kinds: readonly string[]): string {
  let subjects = "";
  for (let i = 0; i < kinds.length; i++) subjects += (i > 0 ? "," : "") + jsonString(workSubject(seat, kinds[i]!));
  return `{"seat":${jsonString(seat)},"stream":${jsonString(workStream(seat))},"consumer":${jsonString(workConsumer(seat))},"subjects":[${subjects}]}`;
}

/** A JSON array of entries already written: `[]` for none, one string for every empty list. */
function list(entries: string): string {
  return entries === "" ? "[]" : `[${entries}]`;
}

/** `entries` with `entry` added after a comma when it holds one already. */
function add(entries: string, entry: string): string {
  return entries === "" ? entry : `${entries},${entry}`;
}

/** The holders of a seat as MESH_PROVISIONS names them: `[{node, address?}]`, address the node's overlay name (R75). */
function holdersEntry(state: State, nodes: readonly string[]): string {
  let entries = "";
  for (const node of nodes) {
    const name = overlayNameOf(state.overlay, node);
    entries = add(entries, name === undefined ? `{"node":${jsonString(node)}}` : `{"node":${jsonString(node)},"address":${jsonString(name)}}`);
  }
  return list(entries);
}

/**
 * The environment of `module` dialling `address` as `user` (see ModuleEnvironment, R57).
 * A module the catalogue does not know gets empty lists. `holders(seat)` is holdersOf(state, seat),
 * passed by a caller composing many modules that remembers it (it scans the catalogue). Pure.
 */
export function moduleEnvironment(
  state: State, module: string, address: string, user: string, fingerprint: string,
  holders: (seat: string) => readonly string[] = (seat) => holdersOf(state, seat),
): ModuleEnvironment {
  const manifest = moduleOf(state.modules, module)?.manifest;
  let work = "";
  let submits = "";
  let emits = "";
  let follows = "";
  let tools = "";
  let calls = "";
  let provisions = "";
  // A manifest names a few seats: the ones seen are kept in a list, not a set.
  const seen: string[] = [];
  for (const claim of manifest?.claims ?? []) {
    const seat = resolveSeat(state.modules, claim);
    const record = seatOf(state.modules, seat);
    if (!record || seen.includes(seat)) continue;
    seen.push(seat);
    if (record.accepts.length > 0) work = add(work, workEntry(seat, record.accepts));
    for (const event of record.emits) emits = add(emits, `{"seat":${jsonString(seat)},"event":${jsonString(event)},"subject":${jsonString(eventSubject(seat, event))}}`);
  }
  const used: string[] = [];
  for (const use of manifest ? usedSeats(manifest) : []) {
    const seat = resolveSeat(state.modules, use);
    const record = seatOf(state.modules, seat);
    if (!record || used.includes(seat)) continue;
    used.push(seat);
    // R75: where the provision it consumes is, and its login; a provision not minted yet is left out (push mints it first, R31).
    const minted = record.provides === undefined ? undefined : provisionOf(state.provisions, seat, record.provides, module);
    if (minted !== undefined) {
      provisions = add(provisions,
        `{"seat":${jsonString(seat)},"provision":${jsonString(minted.provision)},"protocol":${jsonString(record.protocol)},"user":${jsonString(minted.user)},"holders":${holdersEntry(state, holders(seat))}}`);
    }
    for (const kind of record.accepts) submits = add(submits, `{"seat":${jsonString(seat)},"kind":${jsonString(kind)},"subject":${jsonString(workSubject(seat, kind))}}`);
  }
  for (const use of manifest?.uses ?? []) {
    const tool = toolUseOf(use);
    if (tool === null || !offersTool(state, tool.module, tool.tool)) continue;
    calls = add(calls, `{"module":${jsonString(tool.module)},"tool":${jsonString(tool.tool)},"subject":${jsonString(toolSubject(tool.module, tool.tool))}}`);
  }
  for (const follow of manifest?.follows ?? []) {
    const seat = resolveSeat(state.modules, follow.seat);
    const consumer = followConsumer(module, seat, follow.event);
    follows = add(follows,
      `{"seat":${jsonString(seat)},"event":${jsonString(follow.event)},"subject":${jsonString(eventSubject(seat, follow.event))},"stream":${jsonString(EVENTS_STREAM)},"consumer":${jsonString(consumer)}}`);
  }
  for (const tool of manifest?.tools ?? []) tools = add(tools, `{"tool":${jsonString(tool.name)},"subject":${jsonString(toolSubject(module, tool.name))}}`);
  // In sorted order, as a declaration's canonical JSON writes them (the host sorts its env file's lines itself).
  return {
    MESH_BROKER_ADDRESS: address,
    MESH_BROKER_CERTIFICATE: fingerprint,
    MESH_CALLS: list(calls),
    MESH_EMITS: list(emits),
    MESH_FOLLOWS: list(follows),
    MESH_INBOX_PREFIX: inboxPrefix(user),
    MESH_PROVISIONS: list(provisions),
    MESH_SUBMITS: list(submits),
    MESH_TOOLS: list(tools),
    MESH_USER: user,
    MESH_WORK: list(work),
  };
}
