/**
 * The kit every verb of `mesh` is built with: what a verb is (CliVerb), `busVerb` for a verb sent
 * to the controller, and `report` for its reply. It imports no verb file, so the verb files and
 * the list of verbs (verbs.ts) import it without an import circle (issue 28).
 */
import { printData, viewOf } from "./output.ts";
import { PAGE_LIMIT_MAX, VERBS, VERBS_VERSION, type AnyReply as Reply, type ReplyOf, type RequestOf, type Verb } from "../contracts/verbs.ts";
import { COMMAND_GLOBALS, DRY_RUN_OPTION, EXIT_OK, EXIT_REFUSED, QUERY_GLOBALS, UsageError, clientOf, loadCredential, verbUsageError, type CliContext, type GlobalOptionName } from "./context.ts";
import { writeBusCredential } from "../files/index.ts";
import { withSecret } from "../bus/connect.ts";
import { pendingCredentialFile } from "../controller/credential.ts";
import { duplicateNote, omittedLines, refusalText, renderGeneric, type View } from "./render.ts";
import { randomUUID } from "node:crypto";
import { CommandTransportError } from "../client/send.ts";
import type { DryRunVerb, ListVerb } from "../client/client.ts";
import { WATCH_OPTION, watchChanges } from "./watch.ts";

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
  /** Other names of its last word (`module retire` is also `module unregister`): what a newcomer may type first. */
  aliases?: readonly string[];
  /** The controller verb it sends (src/contracts/verbs.ts), whose summary it shows; none for a verb of this machine's (`up`, `host`). */
  verb?: Verb;
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
 * controller writing (src/serve/server.ts replyErrorOf): the same command id makes it safe (R53).
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

/** What busVerb builds a verb from (its one entry in CLI_VERBS). */
export type BusVerbSpec<V extends Verb> = {
  path: readonly string[];
  aliases?: readonly string[];
  verb: V;
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
};

/**
 * A verb that sends one request to the controller: `body` turns arguments into the request's
 * fields, `render` turns an ok reply into lines. `mutates` (a command, not a query) adds
 * --command-id and --dry-run.
 */
export function busVerb<V extends Verb>(spec: BusVerbSpec<V>): CliVerb {
  const mutates = spec.mutates ?? true;
  const canDryRun = spec.dryRun ?? mutates;
  const options = [...(spec.options ?? []), ...(spec.paged === undefined ? [] : [...PAGE_OPTIONS, WATCH_OPTION]), ...(canDryRun ? [DRY_RUN_OPTION] : [])];
  const verb: CliVerb = {
    path: spec.path,
    ...(spec.aliases ? { aliases: spec.aliases } : {}),
    verb: spec.verb,
    // The verb's one description is its contract's (issue 28): the CLI shows it, it does not restate it.
    summary: VERBS[spec.verb].summary,
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

export { clientOf };

/**
 * A client call, with a timeout's error, or a connection closed under it (`closed`), naming the
 * command id that was sent (when there is one), so `--command-id` retries it safely.
 */
export async function namingId<T>(ctx: CliContext, verb: string, commandId: string | undefined, call: () => Promise<T>): Promise<T> {
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

