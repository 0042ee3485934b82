/**
 * The order several manifests are registered in, for every sender of `module.register` (the CLI's
 * `mesh module register`, `mesh up`'s example mesh). Pure.
 */

import { toolUseOf } from "./manifest.ts";

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

/**
 * The order to register several manifests in: a module declaring a seat comes before the modules
 * that claim, use or follow it, and a module offering a tool before the modules that use it
 * (R74), since registration refuses a claim on a seat the catalogue does not
 * have yet (R25). Otherwise the given order is kept; a cycle is left in the given order (the
 * controller will name the seat). Pure.
 */
export function registrationOrder<T extends { manifest: unknown }>(items: readonly T[]): T[] {
  // What a manifest provides and needs, as keys: a seat's name, or `<module>/` for the module
  // itself, which a use of its tool (`<module>/<tool>`, R74) needs registered first.
  const declares = items.map((item) => {
    const m = (item.manifest ?? {}) as { name?: unknown; seats?: unknown };
    const seats = m.seats && typeof m.seats === "object" ? Object.keys(m.seats) : [];
    return new Set(typeof m.name === "string" ? [...seats, `${m.name}/`] : seats);
  });
  const needs = items.map((item) => {
    const m = (item.manifest ?? {}) as { claims?: unknown; uses?: unknown; follows?: unknown };
    const follows = Array.isArray(m.follows) ? m.follows.map((f) => (f as { seat?: unknown })?.seat).filter((s): s is string => typeof s === "string") : [];
    const uses = strings(m.uses).map((use) => { const tool = toolUseOf(use); return tool === null ? use : `${tool.module}/`; });
    return new Set([...strings(m.claims), ...uses, ...follows]);
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
