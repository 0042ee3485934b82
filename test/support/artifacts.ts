import { mkdirSync } from "node:fs";
import { join } from "node:path";

/**
 * The folder tests keep what a person may want to look at after a run (screenshots): test-artifacts/
 * at the repository's root, gitignored, made when first asked for.
 */
export function artifactsDir(): string {
  const dir = join(import.meta.dirname, "../../test-artifacts");
  mkdirSync(dir, { recursive: true });
  return dir;
}
