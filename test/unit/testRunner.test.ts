import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { homedir, tmpdir } from "node:os";

describe("the test runner (scripts/run-tests.ts)", () => {
  it("gives the tests a configuration folder of the run's own: a `mesh up` or `mesh genesis` under test registers its context there, never in the user's ~/.config/mesh", () => {
    const configHome = process.env.XDG_CONFIG_HOME;
    assert.ok(configHome !== undefined && configHome.startsWith(tmpdir()), `XDG_CONFIG_HOME is ${configHome ?? "unset"}, under ${homedir()} the tests would make their meshes the user's current context`);
  });
});
