import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { entryArguments, packageFile, packageLayout } from "../../../src/files/index.ts";
import { BUNDLE_DIR, BUNDLED_ENTRIES } from "../../../src/files/packageFiles.ts";

describe("the package's own files, built or from sources (issue 29)", () => {
  it("issue 29: built (dist/src/files/packageFiles.js), the root is above dist/ and an entry runs its .js under dist/ with node alone", () => {
    const layout = packageLayout("file:///opt/mesh/dist/src/files/packageFiles.js");
    assert.deepEqual(layout, { root: "/opt/mesh/", built: true });
    assert.deepEqual(entryArguments("src/up/daemonMain.ts", layout), [join("/opt/mesh/", "dist", "src", "up", "daemonMain.js")]);
  });

  it("issue 29: built and bundled, an entry the build bundles runs its bundle, and a chunk of it sees the same root", () => {
    const root = mkdtempSync(join(tmpdir(), "mesh-bundle-"));
    try {
      const bundled = join(root, ...BUNDLE_DIR.split("/"), `${BUNDLED_ENTRIES["src/up/daemonMain.ts"]}.js`);
      mkdirSync(join(root, ...BUNDLE_DIR.split("/")), { recursive: true });
      const layout = packageLayout(pathToFileURL(join(root, ...BUNDLE_DIR.split("/"), "chunk-ABC.js")).href);
      assert.deepEqual(layout, { root: join(root, "/"), built: true });
      // Not built yet: the compiler's output, as before the bundle.
      assert.deepEqual(entryArguments("src/up/daemonMain.ts", layout), [join(root, "dist", "src", "up", "daemonMain.js")]);
      writeFileSync(bundled, "");
      assert.deepEqual(entryArguments("src/up/daemonMain.ts", layout), [bundled]);
      assert.deepEqual(entryArguments("src/up/plan.ts", layout), [join(root, "dist", "src", "up", "plan.js")], "an entry the build does not bundle");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("issue 29: from sources (src/files/packageFiles.ts), an entry runs its .ts under tsx", () => {
    const layout = packageLayout("file:///home/ann/mesh/src/files/packageFiles.ts");
    assert.deepEqual(layout, { root: "/home/ann/mesh/", built: false });
    assert.deepEqual(entryArguments("src/up/daemonMain.ts", layout), ["--import", "tsx", join("/home/ann/mesh/", "src", "up", "daemonMain.ts")]);
  });

  it("issue 29: an entry not named by its .ts path from the root is refused, naming the form", () => {
    assert.throws(() => entryArguments("src/up/daemonMain.js", packageLayout("file:///r/src/files/packageFiles.ts")), /src\/up\/daemonMain\.js.*\.ts/);
  });

  it("issue 29: run from sources here, the files the package ships resolve to this clone's", () => {
    assert.equal(packageLayout().built, false);
    const manifest = JSON.parse(readFileSync(packageFile("package.json"), "utf8")) as { name: string };
    assert.equal(manifest.name, "mesh-controller");
    for (const file of [packageFile("module.json"), packageFile("examples"), packageFile("installer", "controller-permissions.json"), packageFile("bin", "mesh.js")]) assert.ok(existsSync(file), file);
  });
});
