import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const folder = fileURLToPath(new URL("../../../src/compose/", import.meta.url));

describe("composition is pure", () => {
  const files = readdirSync(folder).filter((f) => f.endsWith(".ts"));

  it("R11: src/compose imports no @nats-io, no node:*, no bcrypt and no crypto; reads no clock or randomness", () => {
    assert.ok(files.length >= 5);
    for (const file of files) {
      const text = readFileSync(join(folder, file), "utf8");
      const imports = [...text.matchAll(/from\s+"([^"]+)"/g)].map((m) => m[1]!);
      for (const source of imports) {
        assert.ok(source.startsWith("./") || source.startsWith("../"), `${file} imports ${source}`);
        assert.ok(!/crypto|secrets|bcrypt/.test(source), `${file} imports ${source}`);
      }
      assert.ok(!/Date\.now|new Date|Math\.random|process\./.test(text), `${file} reads a clock, randomness or the process`);
    }
  });
});
