import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { permissionsOf } from "../../../src/compose/index.ts";
import { CONTROLLER_NAME, busUser } from "../../../src/names.ts";
import { EXAMPLE_CONFIG, exampleMesh } from "./exampleMesh.ts";

const templateFile = fileURLToPath(new URL("../../../installer/controller-permissions.json", import.meta.url));
type Template = {
  user: string;
  controllerSubmits: string[];
  publish: { allow: string[] };
  subscribe: { allow: string[] };
  allow_responses?: boolean;
  wildcards: Record<string, string>;
};
const template = JSON.parse(readFileSync(templateFile, "utf8")) as Template;

describe("the controller's carried permissions", () => {
  const { state } = exampleMesh();
  const derived = permissionsOf(state, { kind: "controller", name: CONTROLLER_NAME }, { controllerSubmits: template.controllerSubmits });

  it("R15: the template is stated for the example's submit list and the controller's bootstrap user", () => {
    assert.deepEqual(template.controllerSubmits, [...EXAMPLE_CONFIG.controllerSubmits]);
    assert.equal(template.user, busUser("controller", CONTROLLER_NAME));
  });

  it("R15: every derived subject is in the template, and the template has nothing wider", () => {
    for (const side of ["publish", "subscribe"] as const) {
      const carried = new Set(template[side].allow);
      const composed = new Set(derived[side].allow);
      assert.deepEqual([...composed].filter((s) => !carried.has(s)), [], `${side}: derived but not carried`);
      assert.deepEqual([...carried].filter((s) => !composed.has(s)), [], `${side}: carried but not derived`);
    }
    assert.equal(template.allow_responses ?? false, derived.allow_responses ?? false);
  });

  it("R15: every wildcard of the template is explained", () => {
    for (const subject of [...template.publish.allow, ...template.subscribe.allow]) {
      if (subject.includes(">") || subject.includes("*")) assert.ok(template.wildcards[subject], `unexplained wildcard ${subject}`);
    }
  });
});
