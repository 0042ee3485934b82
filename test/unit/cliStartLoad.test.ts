import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Issue 29: every `mesh` verb starts by loading src/cli/run.ts and what it imports statically, so
 * that is what a `mesh nodes` pays before it dials. The code only some verbs need (certificates,
 * YAML, the ui's server) is imported by them when they run (`await import()`), never from there.
 * Static imports and re-exports count, type-only ones do not (the compiler drops them).
 */

const root = fileURLToPath(new URL("../../", import.meta.url));

/** The modules `file` imports statically: relative ones as paths from the root, packages by name. */
function staticImports(file: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  const specifiers = [
    ...[...text.matchAll(/^\s*(?:import|export)\s+(?!type\s)[^;]*?\sfrom\s+["']([^"']+)["']/gm)].map((m) => m[1]!),
    ...[...text.matchAll(/^\s*import\s+["']([^"']+)["']/gm)].map((m) => m[1]!),
  ];
  return specifiers.map((s) => (s.startsWith(".") ? relative(root, join(root, dirname(file), s)) : s.startsWith("node:") ? s : s.split("/").slice(0, s.startsWith("@") ? 2 : 1).join("/")));
}

/** Every module reached from `start` by static imports (files of the repository and package names). */
function closure(start: string): Set<string> {
  const seen = new Set<string>();
  const stack = [start];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (seen.has(next)) continue;
    seen.add(next);
    if (next.endsWith(".ts") && existsSync(join(root, next))) stack.push(...staticImports(next));
  }
  return seen;
}

describe("what every verb of mesh loads before it runs (issue 29)", () => {
  it("issue 29: src/cli/run.ts reaches the bus client and zod, and no certificate, YAML or ui server code", () => {
    const loaded = closure("src/cli/run.ts");
    for (const needed of ["src/cli/verbs.ts", "src/client/client.ts", "zod", "commander", "@nats-io/transport-node"]) assert.ok(loaded.has(needed), `the walk reached ${needed}`);
    for (const deferred of ["@peculiar/x509", "src/crypto/ca.ts", "installer/tls.ts", "yaml", "src/ui/server.ts"]) {
      assert.ok(!loaded.has(deferred), `${deferred} is loaded by every verb: import it in the verb that needs it, when it runs`);
    }
  });
});

describe("what mesh up's daemons load before they run (issue 29)", () => {
  it("issue 29: the controller's daemon (src/up/daemonMain.ts, then its role's module) reaches no certificate code and no host agent", () => {
    const loaded = new Set([...closure("src/up/daemonMain.ts"), ...closure("src/up/controllerDaemon.ts")]);
    for (const needed of ["src/bootstrap/main.ts", "src/config.ts"]) assert.ok(loaded.has(needed), `the walk reached ${needed}`);
    // The controller starts beside the host agent while `mesh up` waits for its answer: every module it
    // parses there is on that wait. The certificate code is the host's and genesis's.
    for (const deferred of ["@peculiar/x509", "src/crypto/ca.ts", "installer/tls.ts", "installer/genesis.ts", "src/host/agent.ts"]) {
      assert.ok(!loaded.has(deferred), `${deferred} is loaded by the controller's daemon: import it in the role that needs it, when it runs`);
    }
  });
});
