/**
 * `mesh tool call <module> <tool> [json]`: an operator calls a module's tool (R74: operators may
 * call any tool) with a request on its tool subject, straight over the bus with the operator's own
 * credential; the controller takes no part. The answer comes back on the operator's inbox (R33),
 * which the module answers by allow_responses.
 */
import { errors, type NatsConnection } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/nats-core";
import { isTimeout, transientBusConditionOf } from "../bus/errors.ts";
import { closestName, nameProblem, toolSubject } from "../names.ts";
import { EXIT_OK, EXIT_REFUSED, QUERY_GLOBALS, verbUsageError, type CliContext } from "./context.ts";
import { formatData, printData } from "./output.ts";
import type { CliVerb } from "./busVerb.ts";
import { notFoundOf } from "./getKinds.ts";
import { meshClient } from "../client/client.ts";
import type { ModuleView } from "../contracts/verbs.ts";

/**
 * Why a tool call got no answer: nobody serves the subject, nobody answered in time, the bus
 * refused it, no such module or tool is registered (`not-found`), or it failed otherwise.
 */
export type ToolCallFailure = { code: "no-responders" | "timeout" | "refused" | "not-found" | "failed"; message: string };

/** What a tool call answered: `reply` is the answer parsed as JSON when it is JSON, else its text. */
export type ToolCallAnswer = { module: string; tool: string; subject: string; reply: unknown };

const encoder = new TextEncoder();

/**
 * The failure a tool request ended with, worded for the operator (R74). `asker` is the operator's
 * bus user, named in the `mesh explain` line a refusal suggests. Pure.
 */
export function toolCallFailureOf(error: unknown, subject: string, timeoutMs: number, asker: string): ToolCallFailure {
  const noResponders = error instanceof errors.NoRespondersError || (error instanceof errors.RequestError && error.isNoResponders())
    || transientBusConditionOf(error)?.kind === "no-responders";
  if (noResponders) {
    return { code: "no-responders", message: `nothing answers ${subject}: is the module assigned to a node, running, and answering this tool (its manifest's tools)?` };
  }
  const violation = error instanceof PermissionViolationError ? error
    : error instanceof Error && error.cause instanceof PermissionViolationError ? error.cause : undefined;
  if (violation !== undefined) {
    return { code: "refused", message: `the bus refused to publish ${subject} for ${asker}: see why with \`mesh explain ${asker.replace("-", " ")} pub ${subject}\`` };
  }
  if (isTimeout(error)) {
    return { code: "timeout", message: `no answer on ${subject} within ${timeoutMs} ms: the module took longer (give --timeout), or the bus did not let the request through (mesh explain)` };
  }
  return { code: "failed", message: `the request on ${subject} failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}` };
}

/**
 * Sends `body` (bytes) as a request on toolSubject(module, tool) and returns the answer, or the
 * failure (never throws for a failed request; throws what the connection throws when dialled).
 */
export async function callTool(nc: NatsConnection, asker: string, module: string, tool: string, body: Uint8Array, timeoutMs: number): Promise<ToolCallAnswer | ToolCallFailure> {
  const subject = toolSubject(module, tool);
  let text: string;
  try {
    text = (await nc.request(subject, body, { timeout: timeoutMs })).string();
  } catch (error) {
    return toolCallFailureOf(error, subject, timeoutMs, asker);
  }
  let reply: unknown = text;
  try {
    reply = JSON.parse(text);
  } catch {
    // not JSON: the answer is shown as text
  }
  return { module, tool, subject, reply };
}

/**
 * The `not-found` failure of a call to a tool no registered module offers, naming the closest
 * module or tool; null when `module` is registered and offers `tool`. `modules`: the controller's
 * list (ModuleView). Pure. The bus refuses such a call as it refuses a denied one (no grant names
 * the subject), so the refusal alone would send an operator to `mesh explain` for a typo.
 */
export function toolNotOffered(module: string, tool: string, modules: readonly Pick<ModuleView, "name" | "tools">[]): ToolCallFailure | null {
  const found = modules.find((m) => m.name === module);
  // The module's own not-found, as `mesh get` and `mesh logs` say it.
  if (found === undefined) return notFoundOf("module", module, modules);
  if (found.tools.includes(tool)) return null;
  const near = closestName(tool, found.tools);
  const offers = found.tools.length === 0 ? "it offers no tools" : `it offers ${found.tools.join(", ")}`;
  return { code: "not-found", message: `module ${module} offers no tool ${JSON.stringify(tool)}${near === undefined ? "" : ` (did you mean ${near}?)`}: ${offers}` };
}

/** The not-found failure that explains a refused call or one nobody answered (toolNotOffered), or `failure` itself when the module offers the tool or the list cannot be read. */
async function explainedFailure(ctx: CliContext, module: string, tool: string, failure: ToolCallFailure): Promise<ToolCallFailure> {
  if (failure.code !== "refused" && failure.code !== "no-responders") return failure;
  try {
    const answer = await meshClient(await ctx.connection(), ctx.asker(), { timeoutMs: ctx.globals.timeoutMs }).everyPage("modules");
    return (answer.ok ? toolNotOffered(module, tool, answer.modules) : null) ?? failure;
  } catch {
    return failure; // the controller did not answer: the bus's own failure says what is known
  }
}

/** Checks the arguments of `mesh tool call`; returns the request's bytes. Throws UsageError naming the argument. */
function requestOf(module: unknown, tool: unknown, json: unknown): Uint8Array {
  for (const [what, name] of [["<module>", module], ["<tool>", tool]] as const) {
    const problem = nameProblem(String(name));
    if (problem !== null) throw verbUsageError("tool.call", what, problem);
  }
  if (json === undefined) return new Uint8Array();
  try {
    JSON.parse(String(json));
  } catch (error) {
    throw verbUsageError("tool.call", "[json]", `is not JSON (${error instanceof Error ? error.message : String(error)}): quote it for the shell, e.g. '{"name":"ada"}'`);
  }
  return encoder.encode(String(json));
}

async function run(ctx: CliContext, args: readonly unknown[]): Promise<number> {
  const [module, tool, json] = args;
  const body = requestOf(module, tool, json);
  const nc = await ctx.connection();
  const called = await callTool(nc, ctx.asker(), String(module), String(tool), body, ctx.globals.timeoutMs);
  const outcome = "code" in called ? await explainedFailure(ctx, String(module), String(tool), called) : called;
  if ("code" in outcome) {
    ctx.err(`mesh: tool call: ${outcome.message}`);
    if (ctx.globals.json) for (const line of formatData({ ok: false, error: outcome }, ctx.globals.output ?? "json")) ctx.out(line);
    return EXIT_REFUSED;
  }
  if (ctx.globals.json) printData(ctx, { ok: true, ...outcome });
  else ctx.out(typeof outcome.reply === "string" ? outcome.reply : JSON.stringify(outcome.reply));
  return EXIT_OK;
}

/** `mesh tool call`. */
export const TOOL_CALL_CLI_VERB: CliVerb = {
  path: ["tool", "call"],
  summary: "call a module's tool as an operator and print its answer (a request on mesh.tool.<module>.<tool>; operators may call every tool)",
  examples: [
    ["ask showcase's hello tool", "mesh tool call showcase hello"],
    ["with a JSON body, the answer as data", "mesh tool call showcase hello '{\"name\":\"ada\"}' -o json"],
  ],
  arguments: [
    { name: "module", description: "the module that offers the tool" },
    { name: "tool", description: "the tool's name (the module's manifest lists its tools)" },
    { name: "json", description: "the request's body, as JSON (default: empty)", optional: true },
  ],
  globals: QUERY_GLOBALS,
  globalHelp: { timeout: "milliseconds to wait for the bus to take the connection and for the tool's answer (MESH_TIMEOUT_MS)" },
  exitCodes: "0 answered; 1 no registered module offers the tool (not-found), nothing answers it (no-responders), no answer in time (timeout) or the bus refused the request (refused); 2 usage or connection error",
  run,
};

/** The `tool` verbs of the CLI. */
export const TOOL_VERBS: readonly CliVerb[] = [TOOL_CALL_CLI_VERB];
