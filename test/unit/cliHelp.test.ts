/**
 * Issue 12, the CLI as a new user meets it: its version, help texts that say what happens (no
 * rule ids), the shared options shown only where they apply, failures under --json as JSON on
 * stdout, and one title per concept across tables. No server: what needs a mesh is in
 * test/bus/cliIssue12.test.ts.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { runCli } from "../../src/cli/run.ts";
import type { NatsConnection } from "@nats-io/transport-node";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, type CliContext, type CliIo } from "../../src/cli/context.ts";
import { CLI_VERBS, renderDryRun, type OptionSpec } from "../../src/cli/verbs.ts";
import { columnTitle, renderList, renderWhere } from "../../src/cli/render.ts";
import { renderSummary, type UpSummary } from "../../src/up/summary.ts";
import { OUTPUT_FORMATS } from "../../src/cli/output.ts";
import { onlyNamed, renderPush, PUSH_REPLY_MARGIN_MS } from "../../src/cli/push.ts";
import { explainBody, renderExplain, explainExitCode } from "../../src/cli/explain.ts";
import type { PushReport } from "../../src/push/push.ts";

function memoryIo(env: Record<string, string> = {}): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return { stdout: { write: (s: string) => { out += s; } }, stderr: { write: (s: string) => { err += s; } }, env, out: () => out, err: () => err };
}

/** `--help` of the program and of every command below it (helpTree), with the words that ask for it. */
async function everyHelp(): Promise<Array<{ words: string; text: string }>> {
  const tree = await helpTree();
  return [tree, ...helpNodes(tree)].map((node) => ({ words: node.path.join(" "), text: node.help }));
}

/** A command of `mesh` as its own --help shows it: its words, its names (aliases too), whether it takes arguments, its subcommands. */
type HelpNode = { path: string[]; names: string[]; takesArguments: boolean; help: string; commands: HelpNode[] };

/**
 * Every command of `mesh`, walked down the program's --help (`Commands:` of each level): what a
 * user can type, the verbs runCli adds itself (completion) included. Commander's own `help`
 * command is left out.
 */
async function helpTree(path: string[] = [], names: string[] = []): Promise<HelpNode> {
  const io = memoryIo();
  assert.equal(await runCli([...path, "--help"], io), EXIT_OK, `mesh ${path.join(" ")} --help`);
  const text = io.out();
  const usage = /^Usage: (.*)$/m.exec(text)?.[1] ?? "";
  const takesArguments = /[<[]/.test(usage.replace(/\[options\]|\[command\]/g, ""));
  const listed = text.split(/^Commands:\n/m)[1]?.split(/\n\s*\n/)[0] ?? "";
  const commands: HelpNode[] = [];
  for (const [, term] of listed.matchAll(/^ {2}(\S+)/gm)) {
    const aliases = term!.split("|");
    if (aliases[0] === "help") continue;
    commands.push(await helpTree([...path, aliases[0]!], aliases));
  }
  return { path, names, takesArguments, help: text, commands };
}

/** Every node of a help tree below its root, parents first. */
function helpNodes(tree: HelpNode): HelpNode[] {
  return tree.commands.flatMap((c) => [c, ...helpNodes(c)]);
}

/**
 * The commands one `mesh ...` span of docs/cli.md names, resolved in the CLI's tree: its words
 * before the first option, down the tree. ` / ` parts alternatives, each in place of the last word
 * before it (`mesh where / seats`, `mesh context list / use <name>`); `a|b` alike. A word that is no
 * subcommand is an argument when its command takes one (`mesh host init`, `mesh history node vm`),
 * and so is every word after it. Returns the paths of the commands named, and each word the CLI
 * has neither as a subcommand nor as an argument.
 */
function resolveSpan(span: string, tree: HelpNode): { paths: string[]; missing: string[] } {
  const paths: string[] = [];
  const missing: string[] = [];
  // Where the first word of the next alternative is looked up (where the word it stands for was); null: it is an argument.
  let level: HelpNode | null = tree;
  for (const alternative of span.replace(/^mesh\s+/, "").split(/\s+\/\s+/)) {
    const words: string[] = [];
    let depth = 0;
    for (const token of alternative.split(/\s+/)) {
      if (depth === 0 && token.startsWith("-")) break;
      if (depth === 0 && /^[a-z0-9]/.test(token)) words.push(token);
      depth += (token.match(/[[<(]/g) ?? []).length - (token.match(/[\]>)]/g) ?? []).length;
    }
    if (level === null || words.length === 0) continue;
    let at: HelpNode = level;
    for (const word of words) {
      const found = word.split(/\\?\|/).map((w) => at.commands.find((c) => c.names.includes(w)));
      if (found.every((c) => c !== undefined)) {
        paths.push(...found.map((c) => c.path.join(" ")));
        level = at;
        at = found[0]!;
        continue;
      }
      if (at.takesArguments) {
        level = null;
      } else {
        missing.push(`\`mesh ${[...at.path, word].join(" ")}\` (in \`${span}\`)`);
        level = at;
      }
      break;
    }
  }
  return { paths, missing };
}

describe("mesh help and version", () => {
  it("mesh --version prints package.json's version first and exits 0", async () => {
    const io = memoryIo({ MESH_CREDENTIAL: "/nonexistent/mesh-credential.json" });
    assert.equal(await runCli(["--version"], io), EXIT_OK);
    const { version } = JSON.parse(readFileSync("package.json", "utf8")) as { version: string };
    assert.equal(io.out().split("\n")[0], `mesh ${version}`);
  });

  it("no help text names a rule id (R29...): each says what happens instead", async () => {
    for (const { words, text } of await everyHelp()) assert.doesNotMatch(text, /\bR\d+\b/, `mesh ${words} --help:\n${text}`);
  });

  it("shared options show only where they apply: --command-id on commands, --timeout where the controller is asked, none on genesis", async () => {
    const helps = new Map((await everyHelp()).map((h) => [h.words, h.text]));
    assert.match(helps.get("assign")!, /--command-id/);
    assert.match(helps.get("assign")!, /--dry-run/);
    assert.doesNotMatch(helps.get("nodes")!, /--command-id|--dry-run/);
    assert.match(helps.get("replay")!, /--dry-run/, "replay --void and --accept-restore append: they take --dry-run");
    assert.doesNotMatch(helps.get("down")!, /--timeout|--credential|--command-id/);
    assert.doesNotMatch(helps.get("genesis")!, /--json|--timeout|--credential|--command-id/);
    const programOptions = helps.get("")!.split("Commands:")[0]!;
    assert.doesNotMatch(programOptions, /--credential|--timeout|--command-id|--json/, "the program's own options are --version and --help only");
    for (const verb of CLI_VERBS) {
      const text = helps.get(verb.path.join(" "))!;
      for (const [name, flag] of [["credential", "--credential"], ["timeout", "--timeout"], ["commandId", "--command-id"]] as const) {
        if ((verb.globals ?? []).includes(name)) assert.ok(text.includes(flag), `${verb.path.join(" ")} lists ${flag}`);
      }
    }
  });

  it("mesh push --help says what each exit code means, 2 included: no reply, or the bus closed the connection, so the push may have run; mesh --help keeps to the summary", async () => {
    const helps = new Map((await everyHelp()).map((h) => [h.words, h.text]));
    const push = helps.get("push")!;
    const exits = push.split("Exit codes:")[1];
    assert.ok(exits !== undefined, push);
    assert.match(exits, /\b0\b[^;]*;\s*1\b[^;]*;\s*2\b/, exits);
    assert.match(exits, /closed the connection/, exits);
    assert.doesNotMatch(helps.get("")!, /Exit codes:/);
  });

  it("mesh push --help says what --timeout bounds there: the wait for the nodes' reports, the reply awaited longer (found by a new-user trial)", async () => {
    const helps = new Map((await everyHelp()).map((h) => [h.words, h.text]));
    const timeoutHelp = (words: string): string => /--timeout <ms>\s+([\s\S]*?)\n {2}-/.exec(helps.get(words)!)![1]!.replace(/\s+/g, " ");
    assert.match(timeoutHelp("push"), /nodes' reports/);
    assert.match(timeoutHelp("push"), new RegExp(`\\+ ${PUSH_REPLY_MARGIN_MS} ms`));
    assert.match(timeoutHelp("compose"), new RegExp(`\\+ ${PUSH_REPLY_MARGIN_MS} ms`));
    assert.match(timeoutHelp("assign"), /controller's reply/);
  });

  it("mesh host --help's summary names every action its action argument lists (found by a new-user trial)", async () => {
    const host = CLI_VERBS.find((v) => v.path.join(" ") === "host")!;
    const actions = host.arguments![0]!.description.split(";")[0]!.split("|").map((a) => a.trim().split(" ")[0]!);
    assert.ok(actions.length >= 4, actions.join(", "));
    for (const action of actions) assert.ok(host.summary.includes(`\`host ${action}\``), `the summary names host ${action}: ${host.summary}`);
  });

  it("docs/cli.md's verb table marks an option required exactly where the CLI requires it (found by a new-user trial: genesis --dir)", () => {
    const readme = readFileSync("docs/cli.md", "utf8");
    const usages = readme.split("\n").filter((line) => line.startsWith("| `mesh "))
      .flatMap((line) => [...line.split(" | ")[0]!.matchAll(/`(mesh [^`]+)`/g)].map((m) => m[1]!));
    assert.ok(usages.length > 10, "docs/cli.md's table has the verbs");
    let checked = 0;
    for (const usage of usages) {
      const words = usage.split(/\s+/).slice(1);
      // `mesh completion` is added by runCli itself, not a CLI_VERBS entry, and has no option.
      if (words[0] === "completion") continue;
      const verb = [...CLI_VERBS].sort((a, b) => b.path.length - a.path.length).find((v) => v.path.every((w, i) => words[i] === w));
      assert.ok(verb, `a CLI verb for \`${usage}\``);
      let depth = 0;
      for (const token of words) {
        depth += (token.match(/\[/g) ?? []).length;
        const flag = /--[a-z-]+/.exec(token)?.[0];
        const spec: OptionSpec | undefined = flag === undefined ? undefined : (verb.options ?? []).find((o) => o.flags.split(/[\s,]+/).includes(flag));
        if (spec !== undefined) {
          checked += 1;
          assert.equal(depth === 0, spec.required === true, `\`${usage}\`: ${flag} is ${spec.required ? "required" : "optional"} in the CLI`);
        }
        depth -= (token.match(/\]/g) ?? []).length;
      }
    }
    assert.ok(checked > 10, `${checked} options checked`);
  });

  it("docs/cli.md's verb table names every verb and subcommand of the CLI, and no name the CLI lacks (found by a new-user trial: context, logs, tool call)", async () => {
    const tree = await helpTree();
    const all = helpNodes(tree).map((n) => n.path.join(" "));
    for (const known of ["context use", "tool call", "logs", "completion", "module retire"]) assert.ok(all.includes(known), `the walk of --help finds mesh ${known}: ${all.join(", ")}`);
    // The check can fail: names the CLI lacks are found, as a word past a verb that takes no argument.
    assert.deepEqual(resolveSpan("mesh context list / current-context / use <name>", tree).missing, ["`mesh context current-context` (in `mesh context list / current-context / use <name>`)"]);
    assert.equal(resolveSpan("mesh nodez", tree).missing.length, 1);
    assert.equal(resolveSpan("mesh nodes all", tree).missing.length, 1);
    assert.deepEqual(resolveSpan("mesh where / seats [--watch]", tree), { paths: ["where", "seats"], missing: [] });
    assert.deepEqual(resolveSpan("mesh host init / rotate-key", tree), { paths: ["host"], missing: [] });

    const verbs = readFileSync("docs/cli.md", "utf8").split(/^## /m).find((section) => section.startsWith("Verbs\n")) ?? "";
    const rows = verbs.split("\n").filter((line) => line.startsWith("| `mesh "));
    assert.ok(rows.length > 10, "docs/cli.md's table has the verbs");
    const listed = new Set<string>();
    const lacked: string[] = [];
    for (const row of rows) {
      const [first, ...rest] = row.split(" | ");
      for (const [column, text] of [[0, first!], [1, rest.join(" | ")]] as const) {
        for (const [, span] of text.matchAll(/`(mesh [^`]+)`/g)) {
          const { paths, missing } = resolveSpan(span!, tree);
          lacked.push(...missing);
          // A verb is listed by the first column; the second may name others in passing.
          if (column === 0) for (const path of paths) listed.add(path);
        }
      }
    }
    const leftOut = all.filter((path) => !listed.has(path)).map((path) => `mesh ${path}`);
    assert.deepEqual({ namedButNotInTheCli: lacked, inTheCliButNotInTheTable: leftOut }, { namedButNotInTheCli: [], inTheCliButNotInTheTable: [] });
  });

  it("every `mesh ...` docs/cli.md names is a command the CLI has", async () => {
    const tree = await helpTree();
    const doc = readFileSync("docs/cli.md", "utf8").replace(/\s*\n\s*/g, " ");
    const spans = [...doc.matchAll(/`(mesh [^`]+)`/g)].map((m) => m[1]!);
    assert.ok(spans.length > 40, `${spans.length} spans`);
    assert.deepEqual(spans.flatMap((span) => resolveSpan(span, tree).missing), []);
  });

  it("-o, --output's help lists every format it accepts, text included (found by a new-user trial)", async () => {
    const withOutput = helpNodes(await helpTree()).filter((n) => n.help.includes("-o, --output <format>"));
    assert.ok(withOutput.length > 20, `${withOutput.length} verbs take -o`);
    for (const node of withOutput) {
      const listed = /-o, --output <format>\s+how to print: ([a-z]+(?:, [a-z]+)*)/.exec(node.help.replace(/\s+/g, " "))?.[1];
      assert.deepEqual(listed?.split(", "), [...OUTPUT_FORMATS], `mesh ${node.path.join(" ")} --help:\n${node.help}`);
    }
    const io = memoryIo();
    assert.equal(await runCli(["nodes", "-o", "xml"], io), EXIT_USAGE);
    assert.match(io.err(), new RegExp(`give one of ${OUTPUT_FORMATS.join(", ")}`));
  });

  it("docs/cli.md names every verb that takes no --json (found by a new-user trial: genesis)", () => {
    const readme = readFileSync("docs/cli.md", "utf8").replace(/\s+/g, " ");
    const sentence = /`--json` on every verb[^.]*?\./.exec(readme)?.[0] ?? "";
    assert.ok(sentence.length > 0, "docs/cli.md says which verbs take --json");
    for (const verb of CLI_VERBS.filter((v) => !(v.globals ?? []).includes("json"))) {
      assert.ok(sentence.includes(`\`mesh ${verb.path.join(" ")}\``), `docs/cli.md names mesh ${verb.path.join(" ")} as taking no --json: ${sentence}`);
    }
  });

  it("mesh host --help lists --credential once (the node's credential, not the operator's)", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["host", "--help"], io), EXIT_OK);
    assert.equal(io.out().split("--credential").length - 1, 1, io.out());
    assert.match(io.out(), /--credential <file>\s+agent: the node's credential/);
  });
});

describe("mesh --json failures", () => {
  it("a usage error under --json is JSON on stdout with a code, exit 2 unchanged", async () => {
    const io = memoryIo({ MESH_CREDENTIAL: "/nonexistent/operator.json" });
    assert.equal(await runCli(["nodes", "--json"], io), EXIT_USAGE);
    const printed = JSON.parse(io.out()) as { ok: boolean; error: { code: string; message: string } };
    assert.equal(printed.ok, false);
    assert.equal(printed.error.code, "usage");
    assert.ok(io.err().length > 0, "stderr still says it");
  });

  it("a parse error (unknown option) under --json is JSON on stdout too", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["nodes", "--json", "--frobnicate"], io), EXIT_USAGE);
    assert.equal((JSON.parse(io.out()) as { error: { code: string } }).error.code, "usage");
  });

  it("without --json a failure prints nothing on stdout", async () => {
    const io = memoryIo({ MESH_CREDENTIAL: "/nonexistent/operator.json" });
    assert.equal(await runCli(["nodes"], io), EXIT_USAGE);
    assert.equal(io.out(), "");
  });
});

describe("one title per concept across tables", () => {
  it("holders read HELD BY, a credential's address ADDRESS, the overlay name OVERLAY, in mesh seats/nodes/credentials and the summary", () => {
    const seats = renderList("seats", ["name", "declaredBy", "holders"])({ seats: [{ name: "s", declaredBy: "m", holders: ["a"] }] })[0]!;
    const nodes = renderList("nodes", ["name", "overlayName", "credentialAddress"])({ nodes: [{ name: "a", overlayName: "a.internal", credentialAddress: "tls://x:1" }] })[0]!;
    const credentials = renderList("credentials", ["user", "address", "mintedAt"])({ credentials: [{ user: "u", address: "tls://x:1", mintedAt: "t" }] })[0]!;
    const where = renderWhere({ placed: [{ node: "a", overlayName: "a.internal", hub: true, broker: true }], hub: "a", broker: "a" })[0]!;
    const summary: UpSummary = {
      mesh: { genesisAddress: "tls://x:1", fingerprint: "F", dir: "d" },
      nodes: [{ name: "a", overlayName: "a.internal", hub: true, modules: [], credentialAddress: "tls://x:1", lastSent: null }],
      seats: [{ name: "s", protocol: "p", holders: ["a"], accepts: [] }],
      busUsers: [], applied: [], processes: {},
    };
    const summaryLines = renderSummary(summary).join("\n");
    assert.match(seats, /HELD BY/);
    assert.match(seats, /DECLARED BY/);
    assert.match(summaryLines, /HELD BY/);
    assert.match(nodes, /OVERLAY\s+ADDRESS/);
    assert.match(summaryLines, /OVERLAY\s+ADDRESS/);
    assert.match(credentials, /ADDRESS\s+MINTED AT/);
    assert.match(where, /OVERLAY/);
    for (const line of [seats, nodes, credentials, summaryLines]) assert.doesNotMatch(line, /HOLDERS|CREDENTIALADDRESS|OVERLAYNAME|DIALS|[A-Z]{2,}BY\b/, line);
    assert.equal(columnTitle("mintedAt"), "MINTED AT");
  });
});

describe("mesh compose and dry runs", () => {
  const report = {
    pushId: "p1", dryRun: true, recordsSequence: 7,
    nodes: [{ node: "alpha", outcome: "sent", digest: "abcdef0123456789" }, { node: "beta", outcome: "unchanged", digest: "0123456789abcdef" }],
    leftOut: [], provisionsMinted: 0, raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 0, boundHit: false,
    declarations: [{ node: "alpha", digest: "abcdef0123456789" }, { node: "beta", digest: "0123456789abcdef" }],
  } as unknown as PushReport;

  it("compose <node> shows that node only, and a dry run says would send, never sent", () => {
    const narrowed = onlyNamed(report, ["alpha"]);
    assert.deepEqual(narrowed.nodes.map((n) => n.node), ["alpha"]);
    assert.deepEqual((narrowed.declarations ?? []).map((d) => (d as { node: string }).node), ["alpha"]);
    const text = renderPush(narrowed).join("\n");
    assert.match(text, /would send/);
    assert.doesNotMatch(text, /\bsent\b/);
    assert.doesNotMatch(text, /beta/);
    assert.deepEqual(onlyNamed(report, []).nodes.length, 2, "no names: every node");
    assert.deepEqual(onlyNamed({ ...report, dryRun: false }, ["alpha"]).nodes.length, 2, "a real push is never narrowed");
  });

  it("a dry run's reply reads as the events it would append, nothing written", () => {
    const lines = renderDryRun({ ok: true, dryRun: true, events: [{ type: "NodeEnrolled", node: "n", actor: "a", commandId: "c", at: "t" }] });
    assert.match(lines[0]!, /would append 1 event/);
    assert.match(lines[1]!, /NodeEnrolled \{"node":"n"\}/);
    assert.match(renderDryRun({ ok: true, dryRun: true, events: [] })[0]!, /nothing would be appended/);
  });
});

describe("mesh explain without a subject", () => {
  it("asks for the principal's grants: kind and name alone; direction without subject is a usage error", () => {
    assert.deepEqual(explainBody(["module", "showcase"]), { kind: "module", name: "showcase" });
    assert.deepEqual(explainBody(["module", "showcase", "pub", "a.b"]), { kind: "module", name: "showcase", direction: "pub", subject: "a.b" });
    assert.throws(() => explainBody(["module", "showcase", "pub"]), { name: "UsageError" });
  });

  it("lists the grants as a table, exit 0", () => {
    const reply = { ok: true, principal: { kind: "module", name: "showcase" }, user: "module-showcase", responder: false, onTheBus: true,
      grants: [{ direction: "pub", subject: "mesh.event.showcase.>", because: "manifest emits" }] };
    const lines = renderExplain(reply);
    assert.match(lines.join("\n"), /DIRECTION\s+SUBJECT\s+BECAUSE/);
    assert.match(lines.join("\n"), /mesh\.event\.showcase\.>/);
    assert.equal(explainExitCode(reply), EXIT_OK);
  });
});

describe("a busy command names its command id", () => {
  /** A context whose connection answers every request with `reply` and records the bodies. */
  function answering(reply: unknown, json: boolean) {
    const bodies: Array<Record<string, unknown>> = [];
    const out: string[] = [];
    const err: string[] = [];
    const nc = {
      info: undefined,
      request: (_subject: string, data: Uint8Array) => {
        bodies.push(JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown>);
        return Promise.resolve({ string: () => JSON.stringify(reply) });
      },
    } as unknown as NatsConnection;
    const ctx: CliContext = {
      io: { stdout: { write: () => undefined }, stderr: { write: () => undefined }, env: {} },
      config: { credentialFile: "unused", timeoutMs: 1_000 },
      globals: { credential: "unused", json, timeoutMs: 1_000 },
      connection: () => Promise.resolve(nc),
      asker: () => "operator-test",
      out: (line) => { out.push(line); },
      err: (line) => { err.push(line); },
    };
    return { ctx, bodies, out, err };
  }
  const remove = CLI_VERBS.find((v) => v.path.join(" ") === "node remove")!;
  const busy = { ok: false, error: { code: "busy-retry", message: "another controller kept writing the records" } };

  it("a busy-retry refusal prints the command id it sent, for --command-id (exit 1)", async () => {
    const { ctx, bodies, err } = answering(busy, false);
    assert.equal(await remove.run(ctx, ["n1"], {}), EXIT_REFUSED);
    const sent = bodies[0]!.commandId;
    assert.equal(typeof sent, "string");
    assert.ok(err.join("\n").includes(`--command-id ${String(sent)}`), err.join("\n"));
  });

  it("a bus-unavailable refusal (the bus away for a moment) prints the command id it sent too: sending it again is safe (exit 1)", async () => {
    const { ctx, bodies, err } = answering({ ok: false, error: { code: "bus-unavailable", message: "the bus was unavailable for a moment" } }, false);
    assert.equal(await remove.run(ctx, ["n1"], {}), EXIT_REFUSED);
    assert.ok(err.join("\n").includes(`--command-id ${String(bodies[0]!.commandId)}`), err.join("\n"));
  });

  it("a refused push sends no command id and prints none under --json: a second push is safe by itself (R31)", async () => {
    const push = CLI_VERBS.find((v) => v.path.join(" ") === "push")!;
    const refused = { ok: false, v: 1, error: { code: "unknown-node", field: "nodes", message: "vmm is not enrolled" } };
    const { ctx, bodies, out } = answering(refused, true);
    assert.equal(await push.run(ctx, [["vmm"]], {}), EXIT_REFUSED);
    assert.equal(bodies[0]!.commandId, undefined);
    const printed = JSON.parse(out.join("\n")) as Record<string, unknown>;
    assert.equal((printed.error as { code: string }).code, "unknown-node");
    assert.equal("commandId" in printed, false);
  });

  it("under --json the refusal carries the command id it sent", async () => {
    const { ctx, bodies, out } = answering(busy, true);
    assert.equal(await remove.run(ctx, ["n1"], {}), EXIT_REFUSED);
    const printed = JSON.parse(out.join("\n")) as { ok: boolean; error: { code: string }; commandId: string };
    assert.equal(printed.error.code, "busy-retry");
    assert.equal(printed.commandId, bodies[0]!.commandId);
  });
});

describe("usage errors read alike (found by a new-user trial)", () => {
  /** What `mesh <argv>` printed on stderr, and its exit code; no bus is dialled for a usage error. */
  async function usage(argv: string[]): Promise<string> {
    const io = memoryIo({ MESH_CREDENTIAL: "/nonexistent/operator.cred" });
    assert.equal(await runCli(argv, io), EXIT_USAGE, argv.join(" "));
    return io.err();
  }

  it("a kind that is not one names the kinds in words, for explain and credential rotate as for history", async () => {
    assert.match(await usage(["history", "nodez", "vm"]), /^mesh: history: kind: an entity kind: one of mesh, seat, /);
    for (const argv of [["explain", "nodez", "vm"], ["credential", "rotate", "nodez", "vm"]]) {
      const err = await usage(argv);
      assert.match(err, /: kind: a principal kind: one of controller, operator, node, module, builder\n$/, argv.join(" "));
      assert.doesNotMatch(err, /Invalid option/, argv.join(" "));
    }
  });

  it("every usage error starts with one `mesh: <verb>:`, never `mesh: mesh`", async () => {
    for (const [argv, verb] of [
      [["explain", "node", "vm", "pub"], "explain"],
      [["explain", "node", "vm", "pob", "a.b"], "explain"],
      [["replay", "--void", "x", "--reason", "why"], "replay"],
      [["replay", "--void", "3"], "replay"],
    ] as const) {
      const err = await usage([...argv]);
      assert.ok(err.startsWith(`mesh: ${verb}: `), `${argv.join(" ")}: ${err}`);
      assert.doesNotMatch(err, /mesh: mesh/);
    }
  });
});

describe("mesh module retire", () => {
  it("is in mesh module --help, and `mesh module unregister` and `remove` are its aliases, not a usage error", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["module", "--help"], io), EXIT_OK);
    assert.match(io.out(), /retire\|unregister \[options\] <module>/);
    for (const alias of ["unregister", "remove"]) {
      const help = memoryIo();
      assert.equal(await runCli(["module", alias, "--help"], help), EXIT_OK, help.err());
      assert.match(help.out(), /Usage: mesh module retire\|unregister \[options\] <module>/);
    }
  });

  it("docs/cli.md lists mesh module retire and counts it among the repeats that answer unchanged", () => {
    const doc = readFileSync("docs/cli.md", "utf8");
    assert.match(doc, /\| `mesh module retire <module>`/);
    assert.match(doc.replace(/\s+/g, " "), /`module retire` of a module retired/);
  });
});
