import { logsSubject } from "../names.ts";
import { LOGS_DEFAULT_LINES, LOGS_MAX_LINES, LogsReply } from "../contracts/logs.ts";
import { meshClient } from "../client/client.ts";
import { EXIT_OK, EXIT_REFUSED, UsageError, type CliContext } from "./context.ts";
import { printData } from "./output.ts";
import { printable } from "./render.ts";
import { notFoundOf } from "./getKinds.ts";
import type { CliVerb } from "./busVerb.ts";

/**
 * `mesh logs <module> [--node n] [--tail N] [--follow]` (R72): a module's output, read through
 * its node's agent over the bus (logsSubject; only operators may ask, only that node answers).
 * Without --node, the node is the one the module is assigned to (asked of the controller); a
 * module on several nodes needs --node. `--follow` asks again every FOLLOW_EVERY_MS for what was
 * written since, until interrupted. Exit 1 when the node refuses (no such module there) or does
 * not answer (its agent is not running).
 */

/** How often `--follow` asks for new output. */
export const FOLLOW_EVERY_MS = 1_000;

/** `--tail` as a whole number of lines, 1 to LOGS_MAX_LINES. Throws UsageError naming it. */
function tailOf(value: unknown): number {
  if (value === undefined) return LOGS_DEFAULT_LINES;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > LOGS_MAX_LINES) throw new UsageError(`logs: --tail: give a whole number of lines, 1 to ${LOGS_MAX_LINES}`);
  return n;
}

/**
 * The node to ask: --node, else the one node the module is assigned to; a `not-found` refusal when
 * no module of that name is registered (naming the closest). Throws UsageError when the module is
 * on no node or on several.
 */
async function nodeOf(ctx: CliContext, module: string, given: unknown): Promise<string | { ok: false; code: "not-found"; message: string }> {
  if (typeof given === "string") return given;
  const client = meshClient(await ctx.connection(), ctx.asker(), { timeoutMs: ctx.globals.timeoutMs });
  const answer = await client.everyPage("modules");
  if (!answer.ok) throw new UsageError(`logs: the controller did not list the modules (${answer.error.code}): pass --node <node>`);
  const found = answer.modules.find((m) => m.name === module);
  if (!found) return { ok: false, ...notFoundOf("module", module, answer.modules) };
  if (found.nodes.length !== 1) {
    throw new UsageError(found.nodes.length === 0
      ? `logs: module ${module} is assigned to no node now: name the node it ran on (\`mesh logs ${module} --node <node>\`), or assign it (\`mesh assign ${module} <node>\`)`
      : `logs: module ${module} runs on ${found.nodes.join(", ")}: pass --node <node>`);
  }
  return found.nodes[0]!;
}

export const LOGS_CLI_VERB: CliVerb = {
  path: ["logs"],
  summary: "a module's output (stdout and stderr) as its node's agent kept it, read over the bus (operators only)",
  examples: [["the last 100 lines of module echo", "mesh logs echo"], ["on node beta, following", "mesh logs echo --node beta --follow"]],
  arguments: [{ name: "module", description: "the module" }],
  options: [
    { flags: "--node <node>", description: "the node to ask (default: the one it is assigned to)" },
    { flags: "--tail <lines>", description: `the newest lines to show (default ${LOGS_DEFAULT_LINES})` },
    { flags: "-f, --follow", description: "keep printing what it writes, until interrupted" },
  ],
  globals: ["credential", "json", "timeout"],
  async run(ctx, args, options) {
    const module = String(args[0]);
    const lines = tailOf(options.tail);
    const node = await nodeOf(ctx, module, options.node);
    if (typeof node !== "string") {
      if (ctx.globals.json) printData(ctx, node);
      else ctx.err(`mesh: logs: ${node.message}`);
      return EXIT_REFUSED;
    }
    const nc = await ctx.connection();
    const ask = async (from?: number): Promise<LogsReply> => {
      try {
        const reply = await nc.request(logsSubject(node), JSON.stringify({ module, lines, ...(from === undefined ? {} : { from }) }), { timeout: ctx.globals.timeoutMs });
        return LogsReply.parse(reply.json());
      } catch (error) {
        const why = error instanceof Error ? error.message.split("\n")[0] : String(error);
        return { ok: false, code: "no-module", message: `node ${node}'s agent did not answer (${why}): is \`mesh host\` running there, and is your credential an operator's?` };
      }
    };
    let answer = await ask();
    if (!answer.ok) {
      if (ctx.globals.json) printData(ctx, answer);
      else ctx.err(`mesh: ${answer.message}`);
      return EXIT_REFUSED;
    }
    if (ctx.globals.json && options.follow !== true) {
      printData(ctx, answer);
      return EXIT_OK;
    }
    // A module wrote this text: its escape sequences are shown, never run by the terminal.
    const print = (text: string) => { for (const line of printable(text).replace(/\n$/, "").split("\n")) if (text !== "") ctx.out(line); };
    print(answer.text);
    if (options.follow !== true) return EXIT_OK;
    let stop = false;
    const done = () => { stop = true; };
    process.once("SIGINT", done);
    process.once("SIGTERM", done);
    while (!stop) {
      await new Promise((resolve) => setTimeout(resolve, FOLLOW_EVERY_MS));
      const next = await ask(answer.ok ? answer.size : undefined);
      if (!next.ok) { ctx.err(`mesh: ${next.message}`); continue; }
      print(next.text);
      answer = next;
    }
    return EXIT_OK;
  },
};
