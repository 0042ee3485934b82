import { readFileSync } from "node:fs";
import { UsageError } from "./context.ts";

/** A manifest file as the CLI read it: its path and its JSON, not yet judged (the controller does). */
export type ManifestFile = { file: string; manifest: unknown };

/** The deepest nesting of arrays and objects the CLI sends: far above any manifest, far below the stack. */
export const MAX_JSON_DEPTH = 64;

/**
 * The nesting depth of a parsed JSON value (a scalar is 0), counted without recursion and stopping
 * once past `limit`: JSON.stringify and the validators recurse, and a value nested some 10,000
 * deep overflows their stack ("Maximum call stack size exceeded") instead of being refused.
 */
export function jsonDepthOver(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > limit) return true;
    for (const inner of Array.isArray(v) ? v : Object.values(v)) stack.push({ value: inner, depth: depth + 1 });
  }
  return false;
}

/**
 * Reads each manifest file as JSON. Throws UsageError naming the file when one is unreadable, not
 * JSON, or nested deeper than MAX_JSON_DEPTH.
 */
export function readManifestFiles(files: readonly string[]): ManifestFile[] {
  return files.map((file) => {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      throw new UsageError(`cannot read ${file}: pass the path of a module.json`);
    }
    let manifest: unknown;
    try {
      manifest = JSON.parse(text) as unknown;
    } catch (error) {
      throw new UsageError(`${file} is not JSON (${error instanceof Error ? error.message : "parse error"}): fix the file`);
    }
    if (jsonDepthOver(manifest)) throw new UsageError(`${file} nests arrays or objects more than ${MAX_JSON_DEPTH} deep: a module.json never needs that; fix the file`);
    return { file, manifest };
  });
}
