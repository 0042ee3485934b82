import { Command, CommanderError, InvalidArgumentError } from "commander";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusConnectError } from "../bus/connect.ts";
import { ConfigError, parseClientConfig, type ClientConfig } from "../config.ts";
import { EXIT_OK, EXIT_USAGE, UsageError, connectWithCredentialFile, loadCredential, type CliContext, type CliIo, type GlobalOptions } from "./context.ts";
import { CommandTransportError } from "./send.ts";
import { CLI_VERBS, type CliVerb } from "./verbs.ts";

/** What the word groups of `mesh` are about, for `mesh --help` and `mesh node --help`. */
const GROUPS: Record<string, string> = {
  node: "enrol and remove nodes",
  module: "register and issue modules",
  seat: "rename seats and hand them over",
  overlay: "place nodes on the overlay",
  credential: "rotate credentials",
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
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .configureHelp({ showGlobalOptions: true })
    .showHelpAfterError("(add --help for usage)")
    .option("--credential <file>", "the operator's credential file (MESH_CREDENTIAL)", config.credentialFile)
    .option("--json", "print the controller's reply as JSON", false)
    .option("--timeout <ms>", "milliseconds to wait for the controller's reply (MESH_TIMEOUT_MS); for `mesh push`: the wait for the nodes' reports, the reply is awaited a stated margin longer (see mesh push --help)", parseTimeout, config.timeoutMs)
    .option("--command-id <id>", "the command's id: a retry with the same id appends nothing");

  let connection: Promise<NatsConnection> | undefined;
  let exit = EXIT_OK;

  for (const verb of verbs) {
    let parent = program;
    for (const word of verb.path.slice(0, -1)) {
      parent = parent.commands.find((c) => c.name() === word)
        ?? parent.command(word).description(GROUPS[word] ?? `${word} commands`).exitOverride();
    }
    const command = parent.command(verb.path.at(-1)!).description(verb.summary).exitOverride();
    for (const spec of verb.arguments ?? []) command.argument(argumentSyntax(spec), spec.description);
    for (const spec of verb.options ?? []) {
      if (spec.required) command.requiredOption(spec.flags, spec.description);
      else command.option(spec.flags, spec.description);
    }
    command.action(async (...params: unknown[]) => {
      const self = params.at(-1) as Command;
      const options = params.at(-2) as Record<string, unknown>;
      const all = self.optsWithGlobals<{ credential: string; json: boolean; timeout: number; commandId?: string }>();
      const globals: GlobalOptions = {
        credential: all.credential,
        json: all.json === true,
        timeoutMs: all.timeout,
        ...(all.commandId === undefined ? {} : { commandId: all.commandId }),
      };
      const ctx: CliContext = {
        io,
        config,
        globals,
        connection: () => {
          connection ??= connectWithCredentialFile(globals.credential, { name: "mesh-cli", reconnect: false, timeoutMs: globals.timeoutMs });
          return connection;
        },
        asker: () => loadCredential(globals.credential).user,
        out: (line) => { io.stdout.write(`${line}\n`); },
        err,
      };
      exit = await verb.run(ctx, params.slice(0, -2), options);
    });
  }

  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (error) {
    exit = exitOfError(error, err);
  } finally {
    if (connection) await connection.then((nc) => nc.close(), () => undefined);
  }
  return exit;
}

/** Exit code and stderr line of an error that ended a verb: always 2 (usage or connection). */
function exitOfError(error: unknown, err: (line: string) => void): number {
  if (error instanceof CommanderError) {
    // Commander has already written its message (or the help). --help and --version end with 0.
    return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
  }
  if (error instanceof UsageError || error instanceof BusConnectError || error instanceof CommandTransportError || error instanceof ConfigError) {
    err(`mesh: ${error.message}`);
    return EXIT_USAGE;
  }
  // Not expected: one line, no stack trace, and no connection options (R3).
  err(`mesh: unexpected error: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
  return EXIT_USAGE;
}
