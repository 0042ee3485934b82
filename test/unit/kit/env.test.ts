import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { moduleSettings, ModuleEnvError, parseEnvText } from "../../../src/kit/env.ts";

const WORK = '[{"seat":"greetings","stream":"WORK_greetings","consumer":"greetings","subjects":["mesh.work.greetings.greet"]}]';
const ENV = {
  MESH_BROKER_ADDRESS: "tls://alpha.internal:4222", MESH_USER: "module-greeter", MESH_NKEY_SEED: "SUAEXAMPLE",
  MESH_BROKER_CERTIFICATE_FILE: "/var/lib/mesh/modules/greeter/certificate.pem", MESH_INBOX_PREFIX: "_INBOX_module-greeter", MESH_WORK: WORK,
};

describe("kit: a module's env", () => {
  it("R57: reads an env file unquoted, single-quoted as a POSIX shell writes it, with comments and export lines", () => {
    const text = [
      "# written by the host agent",
      `MESH_WORK=${WORK}`,
      `MESH_EMITS='[{"seat":"greetings","event":"greeted"}]'`,
      "export MESH_USER=module-greeter",
      "MESH_NOTE='it'\\''s here'",
      "",
    ].join("\n");
    assert.deepEqual(parseEnvText(text), {
      MESH_WORK: WORK, MESH_EMITS: '[{"seat":"greetings","event":"greeted"}]', MESH_USER: "module-greeter", MESH_NOTE: "it's here",
    });
  });

  it("R57: the settings name the host, port, inbox prefix and the granted lists; an absent list is empty", () => {
    const settings = moduleSettings(ENV);
    assert.deepEqual([settings.host, settings.port, settings.inboxPrefix], ["alpha.internal", 4222, "_INBOX_module-greeter"]);
    assert.equal(settings.work[0]!.consumer, "greetings");
    assert.deepEqual(settings.tools, []);
  });

  it("R67: a missing seed, a non-TLS address or a list that is no JSON is refused naming its variable", () => {
    const variableOf = (env: Record<string, string | undefined>) => {
      try {
        moduleSettings(env);
        return "accepted";
      } catch (error) {
        assert.ok(error instanceof ModuleEnvError);
        return error.variable;
      }
    };
    assert.equal(variableOf({ ...ENV, MESH_NKEY_SEED: undefined }), "MESH_NKEY_SEED");
    assert.equal(variableOf({ ...ENV, MESH_BROKER_ADDRESS: "nats://alpha.internal:4222" }), "MESH_BROKER_ADDRESS");
    assert.equal(variableOf({ ...ENV, MESH_FOLLOWS: "'[]" }), "MESH_FOLLOWS");
  });
});
