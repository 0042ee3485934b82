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

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/**
 * The order to register several manifests in: a module declaring a seat comes before the modules
 * that claim, use or follow it, since registration refuses a claim on a seat the catalogue does not
 * have yet (R25). Otherwise the given order is kept; a cycle is left in the given order (the
 * controller will name the seat). Pure.
 */
export function registrationOrder<T extends { manifest: unknown }>(items: readonly T[]): T[] {
  const declares = items.map((item) => {
    const seats = (item.manifest as { seats?: unknown })?.seats;
    return new Set(seats && typeof seats === "object" ? Object.keys(seats) : []);
  });
  const needs = items.map((item) => {
    const m = (item.manifest ?? {}) as { claims?: unknown; uses?: unknown; follows?: unknown };
    const follows = Array.isArray(m.follows) ? m.follows.map((f) => (f as { seat?: unknown })?.seat).filter((s): s is string => typeof s === "string") : [];
    return new Set([...strings(m.claims), ...strings(m.uses), ...follows]);
  });
  const done = new Set<number>();
  const order: T[] = [];
  while (done.size < items.length) {
    const next = items.findIndex((_, i) => !done.has(i) && [...needs[i]!].every((seat) =>
      declares[i]!.has(seat) || items.every((__, j) => j === i || done.has(j) || !declares[j]!.has(seat))));
    const pick = next >= 0 ? next : items.findIndex((_, i) => !done.has(i));
    done.add(pick);
    order.push(items[pick]!);
  }
  return order;
}
