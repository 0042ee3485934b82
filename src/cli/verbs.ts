/**
 * The verbs of `mesh`, in one list. Adding a verb is one entry here: `busVerb({...})` for a
 * command or query sent to the controller, or a plain CliVerb with its own `run` for verbs that do
 * something else (`up`, `host`, `push`, ...). runCli builds the argument parser from this list.
 */
import { printData, viewOf } from "./output.ts";
import { HISTORY_LIMIT, PAGE_LIMIT_MAX, REPORTS_PAGE, VERBS, VERBS_VERSION, type AnyReply as Reply, type ReplyOf, type RequestOf, type Verb } from "../contracts/verbs.ts";
import { ENTITY_KINDS } from "../names.ts";
import { COMMAND_GLOBALS, DRY_RUN_OPTION, EXIT_OK, EXIT_REFUSED, QUERY_GLOBALS, UsageError, clientOf, loadCredential, verbUsageError, type CliContext, type GlobalOptionName } from "./context.ts";
import { writeBusCredential } from "../files/index.ts";
import { withSecret } from "../bus/connect.ts";
import { pendingCredentialFile } from "../controller/credential.ts";
import { readManifestFiles, registrationSummary } from "./manifests.ts";
import { registrationOrder } from "../manifest/order.ts";
import { duplicateNote, omittedLines, refusalText, renderGeneric, renderHistory, renderList, renderWhere, shortDigest, table, type View } from "./render.ts";
import { randomUUID } from "node:crypto";
import { CommandTransportError } from "../client/send.ts";
import type { DryRunVerb, ListVerb } from "../client/client.ts";
import { HOST_VERBS } from "./host.ts";
import { UP_VERBS } from "./up.ts";
import { PUSH_CLI_VERB } from "./push.ts";
import { CONTROLLER_CLI_VERB } from "./controller.ts";
import { explainBody, explainExitCode, renderExplain, EXPLAIN_ARGUMENTS } from "./explain.ts";
import { COMPOSE_CLI_VERB } from "./compose.ts";
import { REPLAY_CLI_VERB } from "./replay.ts";
import { VERSION_CLI_VERB } from "./version.ts";
import { GET_CLI_VERB } from "./get.ts";
import { WATCH_OPTION, watchChanges } from "./watch.ts";
import { DESCRIBE_CLI_VERB } from "./describe.ts";
import { EXAMPLES_CLI_VERBS } from "./examples.ts";
import { CONFIG_CLI_VERBS } from "./configVerbs.ts";
import { lastReportOf, lastReportText, reportsOf, type NodeLastReport } from "./lastReport.ts";

/** A positional argument: `<name>`, `[name]` when optional, `<name...>` when variadic. */
export type ArgumentSpec = { name: string; description: string; optional?: boolean; variadic?: boolean };
/** An option in commander's flag syntax (`--key <public-key>`, `--hub`). */
export type OptionSpec = { flags: string; description: string; required?: boolean };

/** One example of a verb's --help: what it does, and the command line that does it (`mesh ...`). */
export type Example = readonly [what: string, run: string];

/** One verb of the CLI. `args` are the positionals in order (a variadic one as a string array). */
export type CliVerb = {
  /** The words of the verb: `["node", "enrol"]` is `mesh node enrol`. */
  path: readonly string[];
  summary: string;
  /** What to type for what, shown after its --help under `Examples:` (issue 29): each runs this verb. */
  examples: readonly Example[];
  arguments?: readonly ArgumentSpec[];
  options?: readonly OptionSpec[];
  /** The shared options it takes (none when absent); their values arrive in `ctx.globals`, not in `options`. */
  globals?: readonly GlobalOptionName[];
  /** What each exit code means for this verb, when it says more than the shared 0/1/2 (shown after its --help). */
  exitCodes?: string;
  /** What a shared option does for this verb when it is not what it does for every verb (push's --timeout), for --help. */
  globalHelp?: Partial<Record<GlobalOptionName, string>>;
  /** Returns the exit code (EXIT_OK, EXIT_REFUSED); throws UsageError or a transport error for 2. */
  run(ctx: CliContext, args: readonly unknown[], options: Readonly<Record<string, unknown>>): Promise<number>;
};

type Row = Record<string, unknown>;

/**
 * Holds what the person typed to the verb's request contract before anything is sent: what the
 * controller would refuse as invalid-request is a usage error here (exit 2), naming the argument
 * or option as typed (`spelled`, else the field) and the contract's words. Throws UsageError.
 */
function checkLocally(verb: Verb, request: Readonly<Record<string, unknown>>, spelled: Readonly<Record<string, string>>): void {
  const checked = VERBS[verb].request.safeParse({ ...request, v: VERBS_VERSION });
  if (checked.success) return;
  const issue = checked.error.issues[0]!;
  const field = issue.path.map(String).join(".");
  throw verbUsageError(verb, spelled[field] ?? (field || "the request"), issue.message);
}

/**
 * Refusal codes a retry can get past, the bus or the records being away for a moment or another
 * controller writing (src/commands/server.ts replyErrorOf): the same command id makes it safe (R53).
 */
const SEND_AGAIN: ReadonlySet<string> = new Set(["busy-retry", "bus-unavailable", "records-unavailable"]);

/**
 * Prints a reply (JSON with --json, else readable lines) and returns its exit code. `spelled`
 * maps a request field to how the person typed it (`publicKey` → `--key`), so a refusal names
 * the flag or argument to fix rather than the wire field. A refusal a retry can get past
 * (SEND_AGAIN) names `commandId`, the id that was sent, for `--command-id`.
 */
export function report(
  ctx: CliContext,
  verb: string,
  reply: Reply,
  render: (reply: Row, view: View) => string[] = renderGeneric,
  spelled: Readonly<Record<string, string>> = {},
  commandId?: string,
): number {
  if (ctx.globals.json) {
    printData(ctx, !reply.ok && commandId !== undefined ? { ...reply, commandId } : reply);
  } else if (reply.ok) {
    for (const line of [...(reply.dryRun === true ? renderDryRun(reply) : render(reply, viewOf(ctx))), ...duplicateNote(reply)]) ctx.out(line);
  }
  if (!reply.ok) {
    const { code } = reply.error;
    // R76: an internal failure names the id the controller answered with: the command may have
    // been applied, and only that id gets its reply (a rerun under a fresh id is refused, node-exists).
    const id = reply.error.commandId ?? commandId;
    const retry = id === undefined ? ""
      : SEND_AGAIN.has(code) ? ` (retry with --command-id ${id})`
        : code === "internal" ? ` (command ${id} may have been applied: send it again with --command-id ${id} to get its reply)` : "";
    ctx.err(`mesh ${verb.replace(/\./g, " ")}: refused (${code})${refusalText(reply.error, spelled)}${retry}`);
    return EXIT_REFUSED;
  }
  return EXIT_OK;
}

/**
 * A verb that sends one request to the controller: `body` turns arguments into the request's
 * fields, `render` turns an ok reply into lines. `mutates` (a command, not a query) adds
 * --command-id and --dry-run.
 */
export function busVerb<V extends Verb>(spec: {
  path: readonly string[];
  verb: V;
  summary: string;
  examples: readonly Example[];
  arguments?: readonly ArgumentSpec[];
  options?: readonly OptionSpec[];
  /** A command that changes the records (default true): takes --command-id and --dry-run. */
  mutates?: boolean;
  /** Whether the controller serves this verb's dry run (default: `mutates`); `replay` has its own report. */
  dryRun?: boolean;
  /**
   * The request's fields from what the person typed (src/contracts/verbs.ts RequestOf): the
   * controller checks them against the contract and names the field it refuses; the client stamps
   * the version, the command id and dryRun.
   */
  body(args: readonly unknown[], options: Readonly<Record<string, unknown>>): Row;
  /** Readable lines of the accepted reply (after `receive` and `enrich`, which may add fields). */
  render?(reply: ReplyOf<V> & Row, view: View): string[];
  /** The exit code of an ok reply when it is not always EXIT_OK (`explain`: 1 when denied). */
  exitCode?(reply: ReplyOf<V>): number;
  /**
   * Takes what an ok reply carries for this machine before anything is printed, and returns the
   * reply to print (`credential rotate`: saves the asking operator's new seed, then drops it, R3).
   */
  receive?(ctx: CliContext, reply: ReplyOf<V>): Row;
  /** How each request field is typed on the command line, where the two differ (`publicKey: "--key"`). */
  spelled?: Readonly<Record<string, string>>;
  /** Asks the controller more about an ok reply before it is printed (`nodes`: each node's last report, R55). */
  enrich?(ctx: CliContext, reply: ReplyOf<V> & Row): Promise<Row>;
  /**
   * A list verb (R59): the reply field holding its list. The verb gets `--limit` and `--continue`;
   * without them the CLI follows every page and prints one reply holding the whole list.
   */
  paged?: string;
}): CliVerb {
  const mutates = spec.mutates ?? true;
  const canDryRun = spec.dryRun ?? mutates;
  const options = [...(spec.options ?? []), ...(spec.paged === undefined ? [] : [...PAGE_OPTIONS, WATCH_OPTION]), ...(canDryRun ? [DRY_RUN_OPTION] : [])];
  const verb: CliVerb = {
    path: spec.path,
    summary: spec.summary,
    examples: spec.examples,
    ...(spec.arguments ? { arguments: spec.arguments } : {}),
    ...(options.length > 0 ? { options } : {}),
    globals: mutates ? COMMAND_GLOBALS : QUERY_GLOBALS,
    async run(ctx, args, options) {
      // A list drawn again at each change the bus carries (watch.ts), until Ctrl-C.
      if (options.watch === true) {
        const { watch: _watch, ...once } = options;
        return watchChanges(ctx, await ctx.connection(), () => verb.run(ctx, args, once));
      }
      const dryRun = canDryRun && options.dryRun === true;
      // A command always carries an id (--command-id or a fresh one): a timeout or a busy refusal names it, so the retry is safe.
      const commandId = mutates ? ctx.globals.commandId ?? randomUUID() : undefined;
      const { dryRun: _dry, ...rest } = options;
      // What the person typed, as the verb's fields: the controller judges them (invalid-request naming the field).
      const request = spec.body(args, rest) as RequestOf<V>;
      checkLocally(spec.verb, request, spec.spelled ?? {});
      const call = commandId === undefined ? {} : { commandId };
      const client = await clientOf(ctx);
      // A list verb (R59) follows every page unless --limit / --continue ask for one.
      const page = spec.paged === undefined ? {} : pageArguments(spec.verb, rest);
      const reply: Reply = await namingId<Reply>(ctx, spec.verb, commandId, () => (dryRun
        ? client.dryRun(spec.verb as DryRunVerb, request as RequestOf<DryRunVerb>, call)
        : page === null
          ? client.everyPage(spec.verb as ListVerb, request as RequestOf<ListVerb>, call)
          : client.ask(spec.verb, { ...request, ...page }, call)));
      const accepted = reply.ok && !dryRun ? (reply as ReplyOf<V>) : undefined;
      let shown: Reply = accepted && spec.receive ? { ...spec.receive(ctx, accepted), ok: true } : reply;
      if (accepted && spec.enrich) shown = { ...(await spec.enrich(ctx, shown as ReplyOf<V> & Row)), ok: true };
      const code = report(ctx, spec.verb, shown, spec.render as ((reply: Row, view: View) => string[]) | undefined, spec.spelled, commandId);
      if (reply.ok && !ctx.globals.json) for (const line of omittedLines(reply)) ctx.err(line);
      if (reply.ok && typeof reply.continue === "string" && !ctx.globals.json) {
        ctx.err(`more ${spec.paged ?? "items"}: mesh ${spec.path.join(" ")} ${page?.limit === undefined ? "" : `--limit ${String(page.limit)} `}--continue ${reply.continue}`);
      }
      return accepted && spec.exitCode ? spec.exitCode(accepted) : code;
    },
  };
  return verb;
}

/**
 * A client call, with a timeout's error, or a connection closed under it (`closed`), naming the
 * command id that was sent (when there is one), so `--command-id` retries it safely.
 */
async function namingId<T>(ctx: CliContext, verb: string, commandId: string | undefined, call: () => Promise<T>): Promise<T> {
  return call().catch((error: unknown) => {
    if (error instanceof CommandTransportError && error.code === "timeout") {
      const retry = commandId === undefined
        ? "ask again"
        : `it may still apply it: retry with --command-id ${commandId} (the same id appends nothing twice)`;
      throw new CommandTransportError("timeout", `the controller did not answer ${verb} within ${ctx.globals.timeoutMs} ms (--timeout); ${retry}`, {
        cause: error,
        ...(commandId === undefined ? {} : { commandId }),
      });
    }
    if (error instanceof CommandTransportError && error.code === "closed" && commandId !== undefined) {
      throw new CommandTransportError("closed", `${error.message}: --command-id ${commandId}`, { cause: error, commandId });
    }
    throw error;
  });
}

/** Readable lines of a dry run's reply: the events the command would append, nothing written. */
export function renderDryRun(reply: Row): string[] {
  const events = Array.isArray(reply.events) ? (reply.events as Row[]) : [];
  if (reply.duplicate === true || events.length === 0) return ["dry run: nothing would be appended"];
  return [
    `dry run: would append ${events.length} event(s), nothing was written:`,
    ...events.map((event) => {
      const { type, actor: _a, commandId: _c, at: _t, ...fields } = event;
      return `  ${String(type)} ${JSON.stringify(fields)}`;
    }),
  ];
}

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

/**
 * `credential rotate operator <me>` (R50): the reply carries the asking operator's new seed.
 * It is kept beside the credential file this CLI dialled with, as `<file>.next` (0600, atomically;
 * pendingCredentialFile), and taken out of the reply so that nothing prints it (R3). The bus admits
 * the old key until the next push installs the list carrying the new one, so the file keeps
 * the old seed for now; a CLI whose file's seed is refused dials with the pending one and moves
 * it over the file (connectWithCredentialFile). Any other reply passes through without a seed.
 */
export function saveOwnRotation(ctx: CliContext, reply: Row): Row {
  const credential = (reply.credential ?? {}) as Row;
  // `seed` (R63); `password` from a controller older than nkeys.
  const secret = typeof credential.seed === "string" ? credential.seed : credential.password;
  if (typeof secret !== "string") return reply;
  const { password: _password, seed: _seed, ...rest } = credential;
  const file = ctx.globals.credential;
  const current = loadCredential(file);
  if (current.user !== credential.user) return { ...reply, credential: rest };
  const pending = pendingCredentialFile(file);
  writeBusCredential(pending, withSecret(current, secret));
  return { ...reply, credential: rest, saved: pending };
}

/**
 * What `credential rotate operator <me>` and `replay --accept-restore` say of the asker's new seed
 * kept in `saved` (`<file>.next`, R50): the bus admits it once the next push installs it; every
 * verb dials the file's seed first (connectWithCredentialFile). The CLI moves to the new one when
 * the bus readmits it with it: during that push when it was run from here (its connection is
 * dropped by the reload), else at the first verb after it, the one the bus refuses the old seed.
 */
export function pendingSeedNote(saved: string): string[] {
  return [
    `your new seed is kept in ${saved}; the bus admits it once the next push installs it, and until then mesh dials your current one`,
    `mesh moves ${saved} over your credential file when the bus first admits the new seed: during that push if you run it from here, else at the first verb after it (refused the current seed, it dials the new one)`,
  ];
}

/** `--limit` and `--continue` of a list verb (R59). */
const PAGE_OPTIONS: readonly OptionSpec[] = [
  { flags: "--limit <n>", description: `one page of at most n items (1 to ${PAGE_LIMIT_MAX}), with the token of the next` },
  { flags: "--continue <token>", description: "the page after the one that printed this token" },
];

/** The page a list verb's `--limit` / `--continue` ask for, or null to follow every page. */
function pageArguments(verb: string, options: Readonly<Record<string, unknown>>): Row | null {
  if (options.limit === undefined && options.continue === undefined) return null;
  const page: Row = {};
  if (options.limit !== undefined) {
    const n = Number(options.limit);
    if (!Number.isInteger(n) || n < 1 || n > PAGE_LIMIT_MAX) throw new UsageError(`${verb}: --limit takes a whole number from 1 to ${PAGE_LIMIT_MAX}`);
    page.limit = n;
  }
  if (options.continue !== undefined) page.continue = String(options.continue);
  return page;
}

/** `--limit <n>` of `mesh history`: a whole number from 1 to HISTORY_LIMIT, else a usage error. */
function historyLimit(value: unknown): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > HISTORY_LIMIT) throw new UsageError(`history: --limit takes a whole number from 1 to ${HISTORY_LIMIT}`);
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
  examples: [["register every manifest of a folder (declarers of seats first)", "mesh module register modules/*/module.json"], ["check one without writing", "mesh module register echo/module.json --dry-run"]],
  summary: "register modules from their module.json files (declarers of seats first); each is tried and reported",
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
    summary: "enrol a node with the public keys its host generated (`mesh host init`); its seed never leaves it",
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
    path: ["node", "remove"], verb: "node.remove", summary: "remove a node (its assignments, overlay place and credential go with it; every credential and provision delivered to it is replaced)",
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
    path: ["module", "issue"], verb: "module.issue", summary: "mint a module's credential: until then its node's declaration leaves it out",
    examples: [["mint module echo's credential", "mesh module issue echo"]],
    arguments: [arg("module", "the registered module")],
    body: (a) => ({ module: a[0] }),
    render: (r) => [`issued module ${r.module}: user ${r.credential.user} at ${r.credential.address}`],
  }),
  busVerb({
    path: ["assign"], verb: "assign", summary: "place a module on a node",
    examples: [["run module echo on node alpha (again: unchanged, exit 0)", "mesh assign echo alpha"]],
    arguments: [arg("module", "the registered module"), arg("node", "the enrolled node")],
    body: (a) => ({ module: a[0], node: a[1] }),
    render: (r) => [`assigned ${r.module} to ${r.node} (now on ${r.nodes.join(", ")})`],
  }),
  busVerb({
    path: ["unassign"], verb: "unassign", summary: "take a module off a node",
    examples: [["take module echo off node alpha", "mesh unassign echo alpha"]],
    arguments: [arg("module", "the assigned module"), arg("node", "the node it runs on")],
    body: (a) => ({ module: a[0], node: a[1] }),
    render: (r) => [`unassigned ${r.module} from ${r.node}${r.nodes.length ? ` (still on ${r.nodes.join(", ")})` : ""}`],
  }),
  busVerb({
    path: ["seat", "alias"], verb: "seat.alias", summary: "rename a seat: lookups of <old> resolve to <new> (a cycle or a missing <new> is refused)",
    examples: [["lookups of seat store resolve to seat storage", "mesh seat alias store storage"]],
    arguments: [arg("old", "the old seat name"), arg("new", "the seat it now resolves to")],
    body: (a) => ({ from: a[0], to: a[1] }),
    spelled: { from: "<old>", to: "<new>" },
    render: (r) => [`seat ${r.from} now resolves to ${r.resolvesTo}`],
  }),
  busVerb({
    path: ["seat", "handover"], verb: "seat.handover", summary: "move a seat from one holder node to another",
    examples: [["move seat storage from node alpha to node beta", "mesh seat handover storage alpha beta"]],
    arguments: [arg("seat", "the seat"), arg("from", "the node holding it now"), arg("to", "the node to hold it")],
    body: (a) => ({ seat: a[0], from: a[1], to: a[2] }),
    render: (r) => [
      `handed ${r.seat} over from ${r.from} to ${r.to}` +
        ` (modules moved: ${r.modulesMoved.join(", ") || "none"}; holders now: ${r.holders.join(", ") || "none"})`,
    ],
  }),
  busVerb({
    path: ["overlay", "place"], verb: "overlay.place", summary: "put a node on the overlay (one node may be the hub); credentials minted before keep their old address until rotated",
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
    path: ["credential", "rotate"], verb: "credential.rotate", summary: "replace a principal's key pair (a node's: the key `mesh host rotate-key` printed on it, --nkey; your own seed is kept beside your credential file, and mesh switches to it once the next push installs it: during that push if run from here, else at the first verb after it)",
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
    path: ["where"], verb: "where", mutates: false, summary: "where every node is on the overlay", body: () => ({}), render: renderWhere, paged: "placed" }),
  busVerb({
    path: ["seats"], verb: "seats", mutates: false, summary: "every seat: declarer, protocol, holders", body: () => ({}),
    examples: [["every seat and its holders", "mesh seats"], ["just the seat names", "mesh seats -o name"]],
    render: renderList("seats", ["name", "declaredBy", "protocol", "accepts", "emits", "holders", "aliases"]),
    paged: "seats",
  }),
  busVerb({
    path: ["nodes"], verb: "nodes", mutates: false, summary: "every node: overlay place, modules, its last report", body: () => ({}),
    examples: [["every node and its last report", "mesh nodes"], ["every cell whole", "mesh nodes -o wide"], ["one page of 50", "mesh nodes --limit 50"]],
    render: renderNodes,
    enrich: withLastReports,
    paged: "nodes",
  }),
  busVerb({
    path: ["modules"], verb: "modules", mutates: false, summary: "every module: version, nodes, seats", body: () => ({}),
    examples: [["every module", "mesh modules"], ["as JSON", "mesh modules -o json"]],
    render: renderList("modules", ["name", "version", "issued", "nodes", "declares", "claims"]),
    paged: "modules",
  }),
  busVerb({
    path: ["credentials"], verb: "credentials", mutates: false, summary: "every credential (never a secret)", body: () => ({}),
    examples: [["every credential (no secret)", "mesh credentials"]],
    render: renderList("credentials", ["user", "principal", "address", "mintedAt"]),
    paged: "credentials",
  }),
  busVerb({
    path: ["reports"], verb: "reports", mutates: false, summary: `each node's last report on the bus: what it applied, when, files found changed and written back; ${REPORTS_PAGE} a page`,
    examples: [["each node's last report", "mesh reports"], ["the next page", "mesh reports --after alpha"]],
    options: [{ flags: "--after <node>", description: "the next page: start after this node (the previous page's `next`)" }],
    body: (_args, options) => (typeof options.after === "string" ? { after: options.after } : {}),
    spelled: { after: "--after" },
    render: (reply, view) => [
      ...table(reply.reports.map((r) => ({ ...r, digest: shortDigest(r.digest) })), ["node", "digest", "ok", "at", "drift", "error"], view.width),
      ...(reply.next !== undefined ? [`more: mesh reports --after ${reply.next}`] : []),
    ],
  }),
  busVerb({
    path: ["history"], verb: "history", mutates: false, summary: "every event about one entity, wherever it was filed, with actor, command id and time",
    examples: [["every event about node alpha", "mesh history node alpha"], ["the newest 20 about module echo", "mesh history module echo --limit 20"]],
    arguments: [arg("kind", ENTITY_KINDS.join(", ")), arg("id", "its name")],
    options: [{ flags: "--limit <n>", description: `the newest events to show, 1 to ${HISTORY_LIMIT} (default ${HISTORY_LIMIT})` }],
    body: (a, o) => ({ kind: a[0], id: a[1], ...(o.limit === undefined ? {} : { limit: historyLimit(o.limit) }) }),
    render: renderHistory,
  }),
  busVerb({
    path: ["explain"], verb: "explain", mutates: false,
    examples: [["may module echo publish on this subject?", "mesh explain module echo pub <subject>"], ["every grant node alpha has", "mesh explain node alpha"]],
    summary: "which manifest line and record allow a principal to pub or sub a subject, or why nothing does (exit 0 allowed and on the bus; 1 denied, or allowed but the principal has no credential yet, so it is not on the bus); without a subject, every grant it has",
    arguments: EXPLAIN_ARGUMENTS, body: explainBody, render: renderExplain, exitCode: explainExitCode,
  }),
  ...HOST_VERBS,
  PUSH_CLI_VERB, COMPOSE_CLI_VERB, CONTROLLER_CLI_VERB, REPLAY_CLI_VERB,
  ...UP_VERBS,
  VERSION_CLI_VERB,
  GET_CLI_VERB, DESCRIBE_CLI_VERB, ...EXAMPLES_CLI_VERBS, ...CONFIG_CLI_VERBS,
];
