/**
 * The order several manifests are registered in, for every sender of `module.register` (the CLI's
 * `mesh module register`, `mesh up`'s example mesh). Pure.
 */

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
