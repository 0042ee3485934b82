import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { commands, queries, definitionOf } from "../../../src/commands/index.ts";
import { commandOfSubject, commandSubject } from "../../../src/names.ts";

const commandsDir = new URL("../../../src/commands/", import.meta.url);

describe("command registry", () => {
  it("keys every definition by its own verb, and no verb is both a command and a query", () => {
    for (const [verb, d] of Object.entries(commands)) assert.equal(d.verb, verb);
    for (const [verb, d] of Object.entries(queries)) assert.equal(d.verb, verb);
    assert.deepEqual(Object.keys(commands).filter((v) => v in queries), []);
    assert.deepEqual(Object.keys(commands).sort(), [
      "assign", "credential.rotate", "module.issue", "module.register", "module.retire", "node.enrol", "node.remove", "overlay.place", "seat.alias", "seat.handover", "unassign",
    ]);
    assert.deepEqual(Object.keys(queries).sort(), ["credentials", "explain", "history", "modules", "nodes", "pushes", "seats", "where"]);
  });

  it("R51: every verb round-trips through its command subject with its asker", () => {
    for (const verb of [...Object.keys(commands), ...Object.keys(queries)]) {
      assert.deepEqual(commandOfSubject(commandSubject("operator-ada", verb)), { principal: "operator-ada", verb });
      assert.ok(definitionOf(verb));
    }
    assert.equal(commandOfSubject("mesh.command.where"), null, "no principal token");
    assert.equal(commandOfSubject("mesh.command.operator-ada."), null, "no verb");
    assert.throws(() => commandSubject("operator.ada", "where"), "a principal is one token");
    assert.throws(() => commandSubject("*", "where"), "a principal is no wildcard");
    assert.equal(definitionOf("no.such.verb"), undefined);
    assert.equal(definitionOf("toString"), undefined, "no verb from Object's prototype");
  });

  it("decide stays pure: command files import no @nats-io, no node: module and read no clock or randomness", () => {
    const files = readdirSync(commandsDir).filter((f) => f.endsWith(".ts") && !f.includes("server"));
    assert.ok(files.length >= 16);
    for (const file of files) {
      const text = readFileSync(new URL(file, commandsDir), "utf8");
      assert.doesNotMatch(text, /from\s+["'](@nats-io\/|node:)/, `${file} imports I/O`);
      assert.doesNotMatch(text, /Date\.now|new Date\(|Math\.random|randomUUID|process\.env/, `${file} reads a clock, randomness or the environment`);
    }
  });
});
