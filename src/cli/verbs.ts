/**
 * The verbs of `mesh`, in one list. Adding a verb is one entry here: `busVerb({...})` for a
 * command or query sent to the controller (its summary comes from its contract,
 * src/contracts/verbs.ts), or a plain CliVerb with its own `run` for verbs that do something else
 * (`up`, `host`, `push`, ...). runCli builds the argument parser from this list. The kit the
 * verbs are built with is busVerb.ts (re-exported here for the tests).
 */
import { printData } from "./output.ts";
import { HISTORY_LIMIT, PUSHES_LIMIT, VERBS, type AnyReply as Reply, type ReplyOf } from "../contracts/verbs.ts";
import { ENTITY_KINDS } from "../names.ts";
import { COMMAND_GLOBALS, DRY_RUN_OPTION, EXIT_OK, EXIT_REFUSED, UsageError, verbUsageError, type CliContext } from "./context.ts";
import { readManifestFiles, registrationSummary } from "./manifests.ts";
import { registrationOrder } from "../manifest/order.ts";
import { duplicateNote, renderGeneric, renderHistory, renderList, renderWhere, shortDigest, table, type View } from "./render.ts";
import { randomUUID } from "node:crypto";
import { HOST_VERBS } from "./host.ts";
import { UP_VERBS } from "./up.ts";
import { PUSH_CLI_VERB } from "./push.ts";
import { CONTROLLER_CLI_VERB } from "./controller.ts";
import { explainBody, explainExitCode, renderExplain, EXPLAIN_ARGUMENTS } from "./explain.ts";
import { COMPOSE_CLI_VERB } from "./compose.ts";
import { REPLAY_CLI_VERB } from "./replay.ts";
import { VERSION_CLI_VERB } from "./version.ts";
import { LOGS_CLI_VERB } from "./logs.ts";
import { GET_CLI_VERB } from "./get.ts";
import { DESCRIBE_CLI_VERB } from "./describe.ts";
import { EXAMPLES_CLI_VERBS } from "./examples.ts";
import { CONTEXT_CLI_VERBS } from "./contextVerbs.ts";
import { TOOL_VERBS } from "./tool.ts";
import { UI_CLI_VERB } from "./ui.ts";
import { lastReportOf, lastReportText, reportsOf, type NodeLastReport } from "./lastReport.ts";
import { moduleRunsText } from "../contracts/report.ts";
import { busVerb, clientOf, namingId, pendingSeedNote, renderDryRun, report, saveOwnRotation, type ArgumentSpec, type CliVerb } from "./busVerb.ts";

export {
  busVerb, report, renderDryRun, pendingSeedNote, saveOwnRotation,
  type ArgumentSpec, type CliVerb, type Example, type OptionSpec,
} from "./busVerb.ts";

type Row = Record<string, unknown>;

const arg = (name: string, description: string): ArgumentSpec => ({ name, description });

/**
 * R55: adds each node's last report on the bus to a `nodes` reply (`lastReport`: an object, what
 * it applied, when, drift, lastReportOf; null when none), asked of the controller's `reports` verb a page of nodes at a time (R59).
 */
async function withLastReports(ctx: CliContext, reply: ReplyOf<"nodes">): Promise<Row> {
  const found = await reportsOf(await clientOf(ctx), reply.nodes.map((n) => n.name));
  if (found === null) return reply;
  return {
    ...reply,
    nodes: reply.nodes.map((n) => ({ ...n, lastReport: lastReportOf(n.lastSent?.digest, found.get(n.name)) })),
  };
}

/** `mesh nodes`'s table: `lastReport` in one line (the data stays an object for `--json`, R55). */
function renderNodes(reply: Row, view: View): string[] {
  const nodes = Array.isArray(reply.nodes) ? (reply.nodes as Row[]) : [];
  return renderList("nodes", ["name", "overlayName", "hub", "modules", "credentialAddress", "lastReport"])({
    ...reply,
    nodes: nodes.map((n) => ({ ...n, lastReport: lastReportText((n.lastReport ?? null) as NodeLastReport | null, (n.lastSent as { digest?: string } | null)?.digest) })),
  }, view);
}

/** `--limit <n>` of `mesh history`: a whole number from 1 to HISTORY_LIMIT, else a usage error. */
function historyLimit(value: unknown): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > HISTORY_LIMIT) throw new UsageError(`history: --limit takes a whole number from 1 to ${HISTORY_LIMIT}`);
  return n;
}

/** `--limit <n>` of `mesh pushes`: a whole number from 1 to PUSHES_LIMIT, else a usage error. */
function pushesLimit(value: unknown): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > PUSHES_LIMIT) throw new UsageError(`pushes: --limit takes a whole number from 1 to ${PUSHES_LIMIT}`);
  return n;
}

/**
 * `mesh module register <module.json...>`: one command per manifest, declarers first (R25). Every
 * manifest is tried and each gets its own line, registered or refused: a refusal of one does not
 * hold back the others that do not depend on it (as `kubectl apply -f a b c`), and a manifest that
 * needs a refused one's seat is refused naming that seat, so nothing is silently skipped. Exit 1
 * when any was refused. `--json`: always `{ ok, results: [{ file, reply }] }`, plus `error` (the
 * first refusal's code) when one was refused. With --dry-run each manifest is decided alone
 * against the records as they are (one that needs another's seat is refused then).
 */
const moduleRegister: CliVerb = {
  path: ["module", "register"],
  verb: "module.register",
  examples: [["register every manifest of a folder (declarers of seats first)", "mesh module register modules/*/module.json"], ["check one without writing", "mesh module register echo/module.json --dry-run"]],
  summary: VERBS["module.register"].summary,
  arguments: [{ name: "manifests", description: "module.json files", variadic: true }],
  options: [DRY_RUN_OPTION],
  globals: COMMAND_GLOBALS,
  async run(ctx, args, options) {
    const files = (args[0] ?? []) as string[];
    if (files.length === 0) throw verbUsageError("module register", undefined, "pass at least one module.json");
    if (ctx.globals.commandId !== undefined && files.length > 1) {
      throw new UsageError("--command-id names one command: register one manifest at a time with it");
    }
    const dryRun = options.dryRun === true;
    const items = registrationOrder(readManifestFiles(files));
    const results: Array<{ file: string; reply: Reply }> = [];
    const quiet: CliContext = { ...ctx, globals: { ...ctx.globals, json: false }, out: () => undefined };
    for (const { file, manifest } of items) {
      const commandId = ctx.globals.commandId ?? randomUUID();
      const client = await clientOf(ctx);
      const reply: Reply = await namingId<Reply>(ctx, "module.register", commandId, () =>
        (dryRun ? client.dryRun("module.register", { manifest }, { commandId }) : client.moduleRegister({ manifest }, { commandId })));
      results.push({ file, reply });
      if (!reply.ok) {
        ctx.err(`${file}:`);
        report(ctx.globals.json ? quiet : ctx, "module.register", reply, renderGeneric, {}, commandId);
        continue;
      }
      if (ctx.globals.json) continue;
      if (dryRun) {
        ctx.out(`${file}:`);
        for (const line of renderDryRun(reply)) ctx.out(line);
        continue;
      }
      const r = reply as ReplyOf<"module.register">;
      ctx.out(`registered ${r.module} ${r.version}` +
        `${r.declares.length ? `; declares ${r.declares.join(", ")}` : ""}${r.claims.length ? `; claims ${r.claims.join(", ")}` : ""}`);
      for (const line of duplicateNote(r)) ctx.out(line);
    }
    const refused = results.filter((r) => !r.reply.ok);
    const summary = registrationSummary(results, dryRun);
    if (summary !== undefined) ctx.err(summary);
    if (ctx.globals.json) {
      const first = refused[0];
      const error = first && !first.reply.ok ? { error: { ...first.reply.error, message: `${first.file}: ${first.reply.error.message}` } } : {};
      printData(ctx, { ok: refused.length === 0, ...error, ...(dryRun ? { dryRun: true } : {}), results });
    }
    return refused.length > 0 ? EXIT_REFUSED : EXIT_OK;
  },
};

/**
 * Every verb of `mesh`. To add one, add an entry: nothing else needs to change. Bus verbs use the
 * controller's verb names (`src/commands/index.ts`).
 */
export const CLI_VERBS: CliVerb[] = [
  busVerb({
    path: ["node", "enrol"], verb: "node.enrol",
    examples: [["enrol node alpha with the two keys `mesh host init` printed on it", "mesh node enrol alpha --key <x25519-public-key> --nkey <U...>"]],
    arguments: [arg("name", "the node's name (also its overlay label)")],
    options: [
      { flags: "--key <public-key>", description: "the node's X25519 public key (base64), printed by `mesh host init`", required: true },
      { flags: "--nkey <public-key>", description: "the node's nkey public key (U...), printed by `mesh host init`", required: true },
    ],
    body: (a, o) => ({ node: a[0], publicKey: o.key, nkey: o.nkey }),
    spelled: { node: "<name>", publicKey: "--key", nkey: "--nkey" },
    render: (r) => [
      `enrolled node ${r.node}: user ${r.credential.user} at ${r.credential.address}, key ${r.credential.nkey}`,
      "give the node this reply (no secret in it: `mesh host credential --from <file>` joins it with the node's own seed):",
      JSON.stringify(r.credential),
    ],
  }),
  busVerb({
    path: ["node", "remove"], verb: "node.remove",
    examples: [["remove node alpha; its credentials and provisions are replaced at the next push", "mesh node remove alpha"], ["see what it would append first", "mesh node remove alpha --dry-run"]],
    arguments: [arg("name", "the enrolled node")],
    body: (a) => ({ node: a[0] }),
    render: (r) => [
      `removed node ${r.node}`,
      ...(r.freshCredentials.length > 0 ? [`fresh keys, installed by the next push: ${r.freshCredentials.map((p) => `${p.kind} ${p.name}`).join(", ")}`] : []),
      ...(r.freshProvisions.length > 0 ? [`fresh provision secrets, delivered by the next push to the nodes that run their consumer or hold their seat: ${r.freshProvisions.map((p) => `${p.provision} of ${p.seat} for ${p.consumer}`).join(", ")}`] : []),
    ],
  }),
  moduleRegister,
  busVerb({
    path: ["module", "issue"], verb: "module.issue",
    examples: [["mint module echo's credential", "mesh module issue echo"]],
    arguments: [arg("module", "the registered module")],
    body: (a) => ({ module: a[0] }),
    render: (r) => [`issued module ${r.module}: user ${r.credential.user} at ${r.credential.address}`],
  }),
  busVerb({
    path: ["module", "retire"], aliases: ["unregister", "remove"], verb: "module.retire",
    examples: [["retire module echo once it runs nowhere (`mesh unassign` first; again: unchanged, exit 0)", "mesh module retire echo"], ["see what it would append first", "mesh module retire echo --dry-run"]],
    arguments: [arg("module", "the registered module")],
    body: (a) => ({ module: a[0] }),
    render: (r) => [
      `retired module ${r.module} ${r.version}`,
      ...(r.credentialRevoked ? ["its credential is revoked: the next push leaves it off the user list (mesh push)"] : []),
    ],
  }),
  busVerb({
    path: ["assign"], verb: "assign",
    examples: [["run module echo on node alpha (again: unchanged, exit 0)", "mesh assign echo alpha"]],
    arguments: [arg("module", "the registered module"), arg("node", "the enrolled node")],
    body: (a) => ({ module: a[0], node: a[1] }),
    render: (r) => [`assigned ${r.module} to ${r.node} (now on ${r.nodes.join(", ")})`],
  }),
  busVerb({
    path: ["unassign"], verb: "unassign",
    examples: [["take module echo off node alpha", "mesh unassign echo alpha"]],
    arguments: [arg("module", "the assigned module"), arg("node", "the node it runs on")],
    body: (a) => ({ module: a[0], node: a[1] }),
    render: (r) => [`unassigned ${r.module} from ${r.node}${r.nodes.length ? ` (still on ${r.nodes.join(", ")})` : ""}`],
  }),
  busVerb({
    path: ["seat", "alias"], verb: "seat.alias",
    examples: [["lookups of seat store resolve to seat storage", "mesh seat alias store storage"]],
    arguments: [arg("old", "the old seat name"), arg("new", "the seat it now resolves to")],
    body: (a) => ({ from: a[0], to: a[1] }),
    spelled: { from: "<old>", to: "<new>" },
    render: (r) => [`seat ${r.from} now resolves to ${r.resolvesTo}`],
  }),
  busVerb({
    path: ["seat", "handover"], verb: "seat.handover",
    examples: [["move seat storage from node alpha to node beta", "mesh seat handover storage alpha beta"]],
    arguments: [arg("seat", "the seat"), arg("from", "the node holding it now"), arg("to", "the node to hold it")],
    body: (a) => ({ seat: a[0], from: a[1], to: a[2] }),
    render: (r) => [
      `handed ${r.seat} over from ${r.from} to ${r.to}` +
        ` (modules moved: ${r.modulesMoved.join(", ") || "none"}; holders now: ${r.holders.join(", ") || "none"})`,
    ],
  }),
  busVerb({
    path: ["overlay", "place"], verb: "overlay.place",
    examples: [["make node alpha the overlay's hub", "mesh overlay place alpha --hub"], ["place node beta", "mesh overlay place beta"]],
    arguments: [arg("node", "the enrolled node")],
    options: [{ flags: "--hub", description: "make it the overlay's one hub" }],
    body: (a, o) => (o.hub === true ? { node: a[0], hub: true } : { node: a[0] }),
    render: (r, view) => [
      `placed ${r.node} at ${r.overlayName}${r.hub ? " (hub)" : ""}`,
      ...(r.note ? [r.note] : []),
      ...(r.staleCredentials.length
        ? ["recorded addresses that differ now (modules move at the next push; others keep theirs until rotated, R10):", ...table(r.staleCredentials, ["user", "address", "addressNow"], view.width === undefined ? undefined : view.width - 2).map((l) => `  ${l}`)]
        : []),
    ],
  }),
  busVerb({
    path: ["credential", "rotate"], verb: "credential.rotate",
    examples: [["replace module echo's key pair", "mesh credential rotate module echo"], ["a node's: the key `mesh host rotate-key` printed on it", "mesh credential rotate node alpha --nkey <U...>"]],
    arguments: [arg("kind", "controller, operator, node, module or builder"), arg("name", "the principal's name")],
    options: [{ flags: "--nkey <public-key>", description: "node only: the new nkey public key `mesh host rotate-key` printed on the node" }],
    body: (a, o) => ({ kind: a[0], name: a[1], ...(o.nkey === undefined ? {} : { nkey: o.nkey }) }),
    spelled: { nkey: "--nkey" },
    receive: saveOwnRotation,
    render: (r) => [
      `rotated ${r.principal.kind} ${r.principal.name}: user ${r.credential.user} at ${r.credential.address} (usable from the next push)`,
      ...(typeof r.saved === "string" ? pendingSeedNote(r.saved) : []),
      ...(r.principal.kind === "node" ? [`the node's host holds the seed of ${r.credential.nkey} (\`mesh host rotate-key\`): it switches to it by itself once the next push installs it`] : []),
    ],
  }),
  busVerb({
    examples: [["every node on the overlay", "mesh where"], ["as YAML", "mesh where -o yaml"]],
    path: ["where"], verb: "where", mutates: false, body: () => ({}), render: renderWhere, paged: "placed" }),
  busVerb({
    path: ["seats"], verb: "seats", mutates: false, body: () => ({}),
    examples: [["every seat and its holders", "mesh seats"], ["just the seat names", "mesh seats -o name"]],
    render: renderList("seats", ["name", "declaredBy", "protocol", "accepts", "emits", "holders", "aliases"]),
    paged: "seats",
  }),
  busVerb({
    path: ["nodes"], verb: "nodes", mutates: false, body: () => ({}),
    examples: [["every node and its last report", "mesh nodes"], ["every cell whole", "mesh nodes -o wide"], ["one page of 50", "mesh nodes --limit 50"]],
    render: renderNodes,
    enrich: withLastReports,
    paged: "nodes",
  }),
  busVerb({
    path: ["modules"], verb: "modules", mutates: false, body: () => ({}),
    examples: [["every module", "mesh modules"], ["as JSON", "mesh modules -o json"]],
    render: renderList("modules", ["name", "version", "issued", "nodes", "declares", "claims"]),
    paged: "modules",
  }),
  busVerb({
    path: ["credentials"], verb: "credentials", mutates: false, body: () => ({}),
    examples: [["every credential (no secret)", "mesh credentials"]],
    render: renderList("credentials", ["user", "principal", "address", "mintedAt"]),
    paged: "credentials",
  }),
  busVerb({
    path: ["reports"], verb: "reports", mutates: false,
    examples: [["each node's last report", "mesh reports"], ["the next page", "mesh reports --after alpha"]],
    options: [{ flags: "--after <node>", description: "the next page: start after this node (the previous page's `next`)" }],
    body: (_args, options) => (typeof options.after === "string" ? { after: options.after } : {}),
    spelled: { after: "--after" },
    render: (reply, view) => [
      ...table(reply.reports.map((r) => ({ ...r, digest: shortDigest(r.digest), modules: moduleRunsText(r.modules) })), ["node", "digest", "ok", "at", "modules", "drift", "error"], view.width),
      ...(reply.next !== undefined ? [`more: mesh reports --after ${reply.next}`] : []),
    ],
  }),
  busVerb({
    path: ["history"], verb: "history", mutates: false,
    examples: [["every event about node alpha", "mesh history node alpha"], ["the newest 20 about module echo", "mesh history module echo --limit 20"]],
    arguments: [arg("kind", ENTITY_KINDS.join(", ")), arg("id", "its name")],
    options: [{ flags: "--limit <n>", description: `the newest events to show, 1 to ${HISTORY_LIMIT} (default ${HISTORY_LIMIT})` }],
    body: (a, o) => ({ kind: a[0], id: a[1], ...(o.limit === undefined ? {} : { limit: historyLimit(o.limit) }) }),
    render: renderHistory,
  }),
  busVerb({
    path: ["pushes"], verb: "pushes", mutates: false,
    examples: [["the newest pushes", "mesh pushes"], ["the newest 20", "mesh pushes --limit 20"]],
    options: [{ flags: "--limit <n>", description: `the newest pushes to show, 1 to ${PUSHES_LIMIT}` }],
    body: (_a, o) => (o.limit === undefined ? {} : { limit: pushesLimit(o.limit) }),
    render: (reply, view) => table(reply.pushes.map((p) => ({ ...p, nodes: p.nodes.map((n) => n.node).join(", ") + (p.sent > p.nodes.length ? ", ..." : "") })), ["id", "at", "actor", "sent", "provisions", "nodes"], view.width),
  }),
  busVerb({
    path: ["explain"], verb: "explain", mutates: false,
    examples: [["may module echo publish on this subject?", "mesh explain module echo pub <subject>"], ["every grant node alpha has", "mesh explain node alpha"]],
    arguments: EXPLAIN_ARGUMENTS, body: explainBody, render: renderExplain, exitCode: explainExitCode,
  }),
  ...HOST_VERBS,
  PUSH_CLI_VERB, COMPOSE_CLI_VERB, CONTROLLER_CLI_VERB, REPLAY_CLI_VERB, LOGS_CLI_VERB,
  ...UP_VERBS,
  VERSION_CLI_VERB,
  GET_CLI_VERB, DESCRIBE_CLI_VERB, ...EXAMPLES_CLI_VERBS, ...CONTEXT_CLI_VERBS, ...TOOL_VERBS,
  UI_CLI_VERB,
];

