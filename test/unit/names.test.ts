/**
 * R52: names composed from user-chosen names are injective. Mesh names may hold dashes, so a
 * composed name must join them with something a mesh name cannot hold (or a constant prefix).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { NAME_PATTERN, busUser, nodeOfReportSubject, reportSubject, declarationConsumer, eventSubject, followConsumer, principalKey, toolSubject, workConsumer, workStream, workSubject, PRINCIPAL_KINDS } from "../../src/names.ts";

/** Every mesh name of up to `max` characters over a dash-heavy alphabet ("a", "b", "-"). */
function names(max: number): string[] {
  const out: string[] = [];
  const grow = (prefix: string) => {
    if (prefix.length > 0 && NAME_PATTERN.test(prefix)) out.push(prefix);
    if (prefix.length === max) return;
    for (const c of ["a", "b", "-"]) grow(prefix + c);
  };
  grow("");
  return out;
}

/** Asserts `name` gives distinct names for distinct argument tuples. */
function assertInjective(what: string, tuples: string[][], name: (...args: string[]) => string): void {
  const seen = new Map<string, string[]>();
  for (const args of tuples) {
    const composed = name(...args);
    const earlier = seen.get(composed);
    assert.equal(earlier, undefined, `${what}: ${JSON.stringify(earlier)} and ${JSON.stringify(args)} both give ${composed}`);
    seen.set(composed, args);
  }
}

const NAMES = names(5);
const triples = (): string[][] => NAMES.flatMap((a) => NAMES.flatMap((b) => NAMES.map((c) => [a, b, c])));
const pairs = (): string[][] => NAMES.flatMap((a) => NAMES.map((b) => [a, b]));

describe("composed names (R52)", () => {
  it("R52: the issue's two modules get two distinct follow consumers", () => {
    assert.notEqual(followConsumer("pay-ledger", "audit", "entry"), followConsumer("pay", "ledger-audit", "entry"));
  });

  it("R52: every composed name is injective over names full of dashes", () => {
    assert.ok(NAMES.length > 50 && NAMES.some((n) => n.includes("--")));
    assertInjective("followConsumer", triples(), followConsumer);
    assertInjective("eventSubject", pairs(), eventSubject);
    assertInjective("workSubject", pairs(), workSubject);
    assertInjective("toolSubject", pairs(), toolSubject);
    for (const f of [workStream, workConsumer, declarationConsumer]) assertInjective(f.name, NAMES.map((n) => [n]), f);
    const principals = PRINCIPAL_KINDS.flatMap((kind) => NAMES.map((n) => [kind, n]));
    assertInjective("busUser", principals, (kind, name) => busUser(kind as (typeof PRINCIPAL_KINDS)[number], name));
    assertInjective("principalKey", principals, (kind, name) => principalKey(kind as (typeof PRINCIPAL_KINDS)[number], name));
  });

  it("R52: stream and consumer names hold none of what JetStream forbids", () => {
    const forbidden = /[.*>\s/\\]/;
    for (const [a, b, c] of triples().slice(0, 5000)) assert.doesNotMatch(followConsumer(a!, b!, c!), forbidden);
    for (const n of NAMES) for (const s of [workStream(n), workConsumer(n), declarationConsumer(n)]) assert.doesNotMatch(s, forbidden);
  });
});

describe("report subjects", () => {
  it("R55: nodeOfReportSubject is the inverse of reportSubject, and null for any other subject", () => {
    for (const node of ["alpha", "build-1", "a"]) assert.equal(nodeOfReportSubject(reportSubject(node)), node);
    assert.equal(nodeOfReportSubject(reportSubject("")), null);
    assert.equal(nodeOfReportSubject("mesh.reports.alpha"), null);
    assert.equal(nodeOfReportSubject("mesh.declaration.alpha"), null);
  });
});
