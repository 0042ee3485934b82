/**
 * Issue 28, one definition per verb: the contract (src/contracts/verbs.ts VERBS) is the one list
 * of the controller's verbs, and the server's registry, the shell's verbs, the client's methods
 * and the CLI's verbs are each that list, no more and no less; each verb has one summary, the
 * contract's, and the CLI shows it.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { VERBS, VERB_NAMES, type Verb } from "../../src/contracts/verbs.ts";
import { REGISTRY, definitionOf } from "../../src/commands/index.ts";
import { knownVerbs } from "../../src/serve/server.ts";
import { meshClient, methodName } from "../../src/client/client.ts";
import { CLI_VERBS } from "../../src/cli/verbs.ts";
import type { NatsConnection } from "@nats-io/transport-node";

const sorted = (names: Iterable<string>): string[] => [...names].sort();

describe("one definition per verb (issue 28)", () => {
  it("the server's registry holds every command and query of the contract, under its own verb, and nothing else", () => {
    const served = VERB_NAMES.filter((verb) => VERBS[verb].kind !== "shell");
    assert.deepEqual(sorted(Object.keys(REGISTRY)), sorted(served));
    for (const [verb, definition] of Object.entries(REGISTRY)) {
      assert.equal(definition.verb, verb);
      assert.equal(definition.kind, VERBS[verb as Verb].kind, verb);
      assert.equal(definition.schema, VERBS[verb as Verb].request, `${verb} parses with its contract's schema, not a second one`);
      assert.equal(definitionOf(verb), definition);
    }
  });

  it("the server answers exactly the contract's verbs once the shell serves push, reports and replay", () => {
    const shell = { push: async () => ({ ok: true }), reports: async () => ({ ok: true }), replay: async () => ({ ok: true }) } as const;
    assert.deepEqual(knownVerbs(shell as never), sorted(VERB_NAMES));
    assert.deepEqual(knownVerbs(), sorted(Object.keys(REGISTRY)), "without the shell's, only the registry's");
  });

  it("the client has one method per verb of the contract, named from it", () => {
    const client = meshClient({} as NatsConnection, "operator-ann");
    const methods = Object.keys(client).filter((key) => !["ask", "dryRun", "everyPage"].includes(key));
    assert.deepEqual(sorted(methods), sorted(VERB_NAMES.map(methodName)));
    assert.equal(methodName("credential.rotate"), "credentialRotate");
  });

  it("the CLI sends every verb of the contract from exactly one of its verbs, and shows the contract's summary", () => {
    const sent = CLI_VERBS.flatMap((cli) => (cli.verb === undefined ? [] : [cli.verb]));
    assert.deepEqual(sorted(sent), sorted(VERB_NAMES), "one CLI verb per controller verb");
    for (const cli of CLI_VERBS) {
      if (cli.verb !== undefined) assert.equal(cli.summary, VERBS[cli.verb].summary, `mesh ${cli.path.join(" ")}`);
    }
  });

  it("every verb has a summary: one line, no rule ids (help text a newcomer reads)", () => {
    for (const verb of VERB_NAMES) {
      const { summary } = VERBS[verb];
      assert.ok(summary.length > 10 && !summary.includes("\n"), verb);
      assert.doesNotMatch(summary, /\bR\d+\b/, verb);
    }
  });
});
