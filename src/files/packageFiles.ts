/**
 * Where this package's own files are, whether it runs built (dist/: what an installed `mesh` runs,
 * in one process) or from its TypeScript sources under tsx (tests, scripts, development). Decided
 * from this module's own URL, here only: every other module asks these functions (issue 29).
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The package's root folder (with a trailing separator) and whether this copy runs built. */
export type PackageLayout = { root: string; built: boolean };

/**
 * The layout seen from `moduleUrl`, this module's URL: built it is
 * `<root>/dist/src/files/packageFiles.js`, or a chunk of the bundle (`<root>/dist/bundled/mesh/*.js`,
 * as deep), from sources `<root>/src/files/packageFiles.ts`.
 */
export function packageLayout(moduleUrl: string = import.meta.url): PackageLayout {
  const built = moduleUrl.endsWith(".js");
  return { root: fileURLToPath(new URL(built ? "../../../" : "../../", moduleUrl)), built };
}

/**
 * A file the package ships beside its code (package.json, module.json, examples/, bin/mesh.js,
 * installer/controller-permissions.json), by its path from the package's root.
 */
export function packageFile(...parts: string[]): string {
  return join(packageLayout().root, ...parts);
}

/**
 * The entry modules the build bundles (scripts/build.mjs), each to `<BUNDLE_DIR>/<name>.js`: the
 * processes `mesh` starts, so that each reads a few files rather than every module (issue 29).
 */
export const BUNDLED_ENTRIES: Readonly<Record<string, string>> = { "src/cli/main.ts": "main", "src/up/daemonMain.ts": "daemonMain" };

/** Where the bundle is, from the package's root: as deep as dist/src/files/, so packageLayout holds in it. */
export const BUNDLE_DIR = "dist/bundled/mesh";

/**
 * The node arguments that run the entry module `source` (its .ts path from the root, e.g.
 * `src/up/daemonMain.ts`): built, its bundle when the build made one (BUNDLED_ENTRIES), else its
 * .js under dist/, with node alone; from sources, the .ts under
 * tsx (resolved from the working folder: run it with the root as cwd). Throws an Error naming the
 * form when `source` is not a .ts path.
 */
export function entryArguments(source: string, layout: PackageLayout = packageLayout()): string[] {
  if (!source.endsWith(".ts")) throw new Error(`entry ${source}: name it by its .ts path from the package's root (src/up/daemonMain.ts)`);
  const parts = source.split("/");
  const bundled = BUNDLED_ENTRIES[source] === undefined ? undefined : join(layout.root, ...BUNDLE_DIR.split("/"), `${BUNDLED_ENTRIES[source]}.js`);
  if (layout.built && bundled !== undefined && existsSync(bundled)) return [bundled];
  return layout.built
    ? [join(layout.root, "dist", ...parts.slice(0, -1), parts.at(-1)!.replace(/\.ts$/, ".js"))]
    : ["--import", "tsx", join(layout.root, ...parts)];
}

/** The version in the package's package.json, what `mesh --version` prints ("unknown" without one). */
export function packageVersion(): string {
  const text = readFileSync(packageFile("package.json"), "utf8");
  return String((JSON.parse(text) as { version?: unknown }).version ?? "unknown");
}
