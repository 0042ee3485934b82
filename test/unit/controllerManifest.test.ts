import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Manifest } from "../../src/manifest/manifest.ts";
import { CONTROLLER_NAME, CONTROLLER_SEAT } from "../../src/names.ts";
import { given, GENESIS } from "../support/givenWhenThen.ts";
import { declaredSeat } from "../../src/projections/index.ts";

const raw: unknown = JSON.parse(readFileSync(new URL("../../module.json", import.meta.url), "utf8"));

describe("the controller's own module.json", () => {
  it("R28: mesh-controller claims the-controller", () => {
    const manifest = Manifest.parse(raw);
    assert.equal(manifest.name, CONTROLLER_NAME);
    assert.ok(manifest.claims.includes(CONTROLLER_SEAT), "module.json must claim the-controller");
  });

  it("R19 R20: it declares the-controller with the three seat fields and declares no uses", () => {
    const manifest = Manifest.parse(raw);
    const seat = manifest.seats[CONTROLLER_SEAT];
    assert.ok(seat, "module.json declares the-controller");
    assert.notEqual(seat.protocol, "", "the controller is spoken to: not a marker");
    assert.ok(Array.isArray(seat.accepts) && Array.isArray(seat.emits));
    assert.deepEqual(manifest.uses, []);
  });

  it("R28: registering it is accepted", () => {
    const outcome = given(GENESIS).when("module.register", { manifest: raw });
    assert.ok(outcome.decision.ok, outcome.decision.ok ? "" : outcome.decision.refusal.message);
    assert.equal(declaredSeat(outcome.after().modules, CONTROLLER_SEAT)?.declaredBy, CONTROLLER_NAME);
  });
});
