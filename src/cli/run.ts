import { Command, CommanderError, InvalidArgumentError } from "commander";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusConnectError } from "../bus/connect.ts";
import { existsSync } from "node:fs";
import { ConfigError, DEFAULT_CREDENTIAL_FILE, parseClientConfig, type ClientConfig } from "../config.ts";
import { readUserConfig, resolveCredential } from "./contexts.ts";
import { EXIT_OK, EXIT_USAGE, UsageError, connectWithCredentialFile, loadCredential, type CliContext, type CliIo, type GlobalOptionName, type GlobalOptions } from "./context.ts";
import { CommandTransportError } from "../client/send.ts";
import { CLI_VERBS, type CliVerb } from "./verbs.ts";
import { SHELLS, completionScript, treeOf, type Shell } from "./completion.ts";
import { OUTPUT_FORMATS, formatData, isData, type OutputFormat } from "./output.ts";
import { GET_KINDS } from "./getKinds.ts";

/** What the word groups of `mesh` are about, for `mesh --help` and `mesh node --help`. */
const GROUPS: Record<string, string> = {
  node: "enrol and remove nodes",
  module: "register, issue and retire modules",
  seat: "rename seats and hand them over",
  overlay: "place nodes on the overlay",
  credential: "rotate credentials",
  context: "your named contexts: which mesh the verbs dial",
  examples: "the example module manifests this package ships",
  tool: "call a module's tools as an operator",
};

function parseTimeout(value: string): number {
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms <= 0) throw new InvalidArgumentError("give the timeout in milliseconds, a whole number above 0");
  return ms;
}

function argumentSyntax(spec: NonNullable<CliVerb["arguments"]>[number]): string {
  if (spec.variadic) return spec.optional ? `[${spec.name}...]` : `<${spec.name}...>`;
  return spec.optional ? `[${spec.name}]` : `<${spec.name}>`;
}

/**
 * Runs `mesh` with `argv` (the words after `mesh`), writing to `io`, and returns the exit code:
 * 0 ok, 1 refused by the controller, 2 usage or connection error (R3: errors name the address,
 * never a password). Never calls process.exit and never throws: tests call it in-process.
 * Settings come from `io.env` (parseClientConfig); the verbs from `verbs` (default CLI_VERBS).
 */
export async function runCli(argv: readonly string[], io: CliIo, verbs: readonly CliVerb[] = CLI_VERBS): Promise<number> {
  const err = (line: string) => { io.stderr.write(`${line}\n`); };
  let config: ClientConfig;
  try {
    config = parseClientConfig(io.env);
  } catch (error) {
    err(`mesh: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT_USAGE;
  }
  const program = new Command("mesh")
    .description("operate a mesh: send commands to its controller over the bus")
    .option("-v, --version", "print the versions of mesh, and of the controller and the bus when a mesh answers (mesh version)")
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .showHelpAfterError("(add --help for usage)");
  // Failures under -o json|yaml are data on stdout too; known from the words until a verb's options are parsed.
  const run: Run = { exit: EXIT_OK, output: outputOfWords(argv) };
  for (const verb of verbs) commandOf(program, verb, config).action(actionOf(verb, { io, config, err, run }));
  addCompletion(program, io);

  // Bare `mesh` is a request for help, not a mistake: stdout, exit 0.
  if (argv.length === 0) {
    io.stdout.write(program.helpInformation());
    return EXIT_OK;
  }
  try {
    await program.parseAsync(versionAsVerb(argv), { from: "user" });
  } catch (error) {
    const failure = failureOf(error, err);
    const hint = error instanceof CommanderError ? usageHint(argv, error.code) : undefined;
    if (hint !== undefined) err(`mesh: ${hint}`);
    run.exit = failure.exit;
    if ((run.output === "json" || run.output === "yaml") && failure.code !== undefined) {
      const id = error instanceof CommandTransportError ? error.commandId ?? run.commandId : run.commandId;
      for (const line of formatData({ ok: false, error: { code: failure.code, message: failure.message }, ...(id === undefined ? {} : { commandId: id }) }, run.output)) io.stdout.write(`${line}\n`);
    }
  } finally {
    if (run.connection) await run.connection.then((nc) => nc.close(), () => undefined);
  }
  return run.exit;
}

/** One run of `mesh`, as the verb that ran left it: its exit code, output format, command id and the connection it opened (closed at the end). */
type Run = { exit: number; output: OutputFormat; commandId?: string; connection?: Promise<NatsConnection> };

/** The command of `verb` under `program` (its word groups made as needed), with its arguments, options, help and the shared options it uses. */
function commandOf(program: Command, verb: CliVerb, config: ClientConfig): Command {
  let parent = program;
  for (const word of verb.path.slice(0, -1)) {
    parent = parent.commands.find((c) => c.name() === word)
      ?? parent.command(word).description(GROUPS[word] ?? `${word} commands`).exitOverride();
  }
  const command = parent.command(verb.path.at(-1)!).description(verb.summary).exitOverride();
  if (verb.aliases !== undefined) command.aliases([...verb.aliases]);
  command.addHelpText("after", examplesText(verb.examples));
  if (verb.exitCodes !== undefined) command.addHelpText("after", `\nExit codes: ${verb.exitCodes}`);
  for (const spec of verb.arguments ?? []) command.argument(argumentSyntax(spec), spec.description);
  for (const spec of verb.options ?? []) {
    if (spec.required) command.requiredOption(spec.flags, spec.description);
    else command.option(spec.flags, spec.description);
  }
  // Only the shared options this verb uses: `mesh down --help` shows no --timeout.
  for (const name of verb.globals ?? []) addGlobalOption(command, name, config, verb.globalHelp?.[name]);
  return command;
}

/**
 * The action of `verb`: its shared options taken out of its own (GlobalOptions), its context
 * (one connection per run, opened on first use), then the verb run, its exit code kept in `run`.
 */
function actionOf(verb: CliVerb, { io, config, err, run }: { io: CliIo; config: ClientConfig; err: (line: string) => void; run: Run }): (...params: unknown[]) => Promise<void> {
  return async (...params: unknown[]) => {
    const own = { ...(params.at(-2) as Record<string, unknown>) };
    run.output = chosenOutput(own.json === true, own.output as OutputFormat | undefined);
    const globals: GlobalOptions = {
      credential: (verb.globals ?? []).includes("credential") ? credentialOf(config, own) : config.credentialFile,
      json: isData(run.output),
      output: run.output,
      timeoutMs: typeof own.timeout === "number" ? own.timeout : config.timeoutMs,
      ...(typeof own.commandId === "string" ? { commandId: own.commandId } : {}),
    };
    for (const name of verb.globals ?? []) delete own[GLOBAL_KEYS[name]];
    delete own.context;
    delete own.output;
    run.commandId = globals.commandId;
    const ctx: CliContext = {
      io,
      config,
      globals,
      connection: () => {
        run.connection ??= connectWithCredentialFile(globals.credential, { name: "mesh-cli", reconnect: false, timeoutMs: globals.timeoutMs });
        return run.connection;
      },
      asker: () => loadCredential(globals.credential).user,
      out: (line) => { io.stdout.write(`${line}\n`); },
      err,
    };
    run.exit = await verb.run(ctx, params.slice(0, -2), own);
  };
}

/**
 * The way out of two usage mistakes commander cannot name, found by a new-user trial: a list asked
 * of a kind's group (`mesh module list`: `mesh get modules` lists them), and `-o` given before the
 * verb (each verb takes it after its name). Undefined for any other mistake. Pure.
 */
export function usageHint(argv: readonly string[], code: string): string | undefined {
  const [first, second] = argv;
  if (code === "commander.unknownCommand" && (second === "list" || second === "ls") && (GET_KINDS as readonly string[]).includes(first ?? "")) {
    return `\`mesh get ${first}s\` lists them`;
  }
  if (code === "commander.unknownOption" && first !== undefined && /^(-o|--output)(=|$)/.test(first)) {
    const verb = argv.find((word, i) => i > 0 && !word.startsWith("-") && argv[i - 1] !== "-o" && argv[i - 1] !== "--output");
    return `give -o after the verb: \`mesh ${verb ?? "<verb>"} ... ${first.includes("=") ? first : `${first} ${argv[1] ?? "json"}`}\``;
  }
  return undefined;
}

/**
 * Exit code, stderr line and `--json` code of an error that ended a verb: always exit 2 (usage or
 * connection). `code` is undefined for --help and --version (exit 0, nothing failed).
 */
function failureOf(error: unknown, err: (line: string) => void): { exit: number; code?: string; message: string } {
  if (error instanceof CommanderError) {
    // Commander has already written its message (or the help). --help and --version end with 0.
    if (error.exitCode === 0) return { exit: EXIT_OK, message: "" };
    return { exit: EXIT_USAGE, code: "usage", message: error.message.replace(/^error: /, "") };
  }
  if (error instanceof UsageError || error instanceof BusConnectError || error instanceof CommandTransportError || error instanceof ConfigError) {
    err(`mesh: ${error.message}`);
    const code = error instanceof UsageError ? "usage"
      : error instanceof BusConnectError ? "connection"
      : error instanceof CommandTransportError ? error.code
      : "config";
    return { exit: EXIT_USAGE, code, message: error.message };
  }
  // Not expected: one line, no stack trace, and no connection options (R3).
  const message = `unexpected error: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`;
  err(`mesh: ${message}`);
  return { exit: EXIT_USAGE, code: "internal", message };
}

/** The credential file a verb dials with (contexts.ts resolveCredential): --credential, MESH_CREDENTIAL, a context, the folder's. */
function credentialOf(config: ClientConfig, own: Readonly<Record<string, unknown>>): string {
  const flag = typeof own.credential === "string" ? own.credential : undefined;
  const contextFlag = typeof own.context === "string" ? own.context : undefined;
  // The user's configuration is read only when a context may decide.
  const user = flag === undefined && config.credentialSet !== true ? readUserConfig(config.configDir) : { contexts: {} };
  return resolveCredential({ config, user, exists: existsSync, ...(flag === undefined ? {} : { flag }), ...(contextFlag === undefined ? {} : { contextFlag }) }).file;
}

/** The option key (commander's camel case) of each shared option. */
const GLOBAL_KEYS: Record<GlobalOptionName, string> = { credential: "credential", json: "json", timeout: "timeout", commandId: "commandId" };

/**
 * Adds one shared option to a verb's command, with its default from the configuration; `help`, when
 * given, is what it does for this verb instead of what it does for every verb.
 */
function addGlobalOption(command: Command, name: GlobalOptionName, config: ClientConfig, help?: string): void {
  switch (name) {
    case "credential":
      command.option("--credential <file>", help ?? `the operator's credential file (default: MESH_CREDENTIAL, else --context's, else ${DEFAULT_CREDENTIAL_FILE} when this folder has one, else the current context's)`);
      command.option("--context <name>", "dial the mesh of this named context (MESH_CONTEXT; `mesh context list` lists them)");
      return;
    case "json":
      command.option("--json", help ?? "print the reply as JSON (failures too, with a code); the same as -o json", false);
      command.option("-o, --output <format>", `how to print: ${OUTPUT_FORMATS.join(", ")} (text, the default: lines and tables fitted to the terminal; json and yaml: the reply as data, failures too; wide: tables with every cell whole; name: kind/name per line)`, parseOutput);
      return;
    case "timeout":
      command.option("--timeout <ms>", help ?? "milliseconds to wait for the bus to take the connection and for the controller's reply (MESH_TIMEOUT_MS)", parseTimeout, config.timeoutMs);
      return;
    case "commandId":
      command.option("--command-id <id>", help ?? "the command's id: a retry with the same id appends nothing");
      return;
  }
}

/**
 * `mesh completion <shell>`: the completion script of this very program (completion.ts), added
 * last so that it names every verb. A shell it does not know is a usage error naming the three.
 */
function addCompletion(program: Command, io: CliIo): void {
  program.command("completion").description("print a shell completion script: bash, zsh or fish").exitOverride()
    .argument("<shell>", SHELLS.join(", "))
    .addHelpText("after", examplesText([
      ["complete mesh's verbs and options in this bash", "mesh completion bash > ~/.mesh-completion.bash && . ~/.mesh-completion.bash"],
      ["in fish", "mesh completion fish | source"],
    ]))
    .action((shell: string) => {
      if (!(SHELLS as readonly string[]).includes(shell)) throw new UsageError(`completion: <shell>: give one of ${SHELLS.join(", ")}`);
      io.stdout.write(completionScript(shell as Shell, treeOf(program)));
    });
}

/** A verb's examples as its --help ends: `# what` over `$ mesh ...`, as kubectl's. */
export function examplesText(examples: CliVerb["examples"]): string {
  return `\nExamples:\n${examples.map(([what, run]) => `  # ${what}\n  $ ${run}`).join("\n\n")}`;
}

function parseOutput(value: string): OutputFormat {
  if (!(OUTPUT_FORMATS as readonly string[]).includes(value)) throw new InvalidArgumentError(`give one of ${OUTPUT_FORMATS.join(", ")}`);
  return value as OutputFormat;
}

/** The format `--json` and `-o` ask for together; a usage error when they disagree. */
function chosenOutput(json: boolean, output: OutputFormat | undefined): OutputFormat {
  if (json && output !== undefined && output !== "json") throw new UsageError(`--json is -o json: give --json or -o ${output}, not both`);
  return output ?? (json ? "json" : "text");
}

/** The output format the words ask for, before commander has parsed them (for a failure in parsing). */
function outputOfWords(argv: readonly string[]): OutputFormat {
  if (argv.includes("--json")) return "json";
  const at = argv.findIndex((w) => w === "-o" || w === "--output");
  const value = at >= 0 ? argv[at + 1] : argv.find((w) => w.startsWith("--output="))?.slice("--output=".length) ?? argv.find((w) => /^-o[a-z]/.test(w))?.slice(2);
  return (OUTPUT_FORMATS as readonly string[]).includes(value ?? "") ? value as OutputFormat : "text";
}

/** `mesh -v`, `-V` and `--version` (then any options) are `mesh version`: one verb prints the versions. */
export function versionAsVerb(argv: readonly string[]): string[] {
  return ["-v", "-V", "--version"].includes(argv[0] ?? "") ? ["version", ...argv.slice(1)] : [...argv];
}
