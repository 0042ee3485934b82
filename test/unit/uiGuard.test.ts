import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { TOKEN_COOKIE, admitted, leaksIn, newToken, safeJson, sameToken, tokenOf, withoutSecrets } from "../../src/ui/guard.ts";
import { edgesOf, layoutOf } from "../../src/ui/graph.ts";
import { pageOf } from "../../src/ui/server.ts";

/** `mesh ui`'s guard (issue 30): the token every request needs, and no secret in what it sends (R3). */
describe("mesh ui: the token and the no-secret filter", () => {
  const token = newToken();
  const at = (path: string) => new URL(path, "http://127.0.0.1:1");

  it("a token is 43 URL-safe characters, fresh each time", () => {
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(newToken(), token);
  });

  it("admits the token in the query or the cookie, and nothing else", () => {
    assert.equal(admitted(at(`/?token=${token}`), undefined, token), true);
    assert.equal(admitted(at("/api/overview"), `a=b; ${TOKEN_COOKIE}=${token}`, token), true);
    assert.equal(admitted(at("/api/overview"), undefined, token), false);
    assert.equal(admitted(at("/?token="), undefined, token), false);
    assert.equal(admitted(at(`/?token=${token.slice(1)}`), undefined, token), false);
    assert.equal(admitted(at("/"), `${TOKEN_COOKIE}=${token}x`, token), false);
    // A wrong query token is not rescued by a right cookie: the query is what was given.
    assert.equal(admitted(at("/?token=wrong"), `${TOKEN_COOKIE}=${token}`, token), false);
    assert.equal(tokenOf(at(`/?token=${token}`), undefined)?.from, "query");
    assert.equal(sameToken(undefined, token), false);
  });

  it("R3: secret fields are removed at any depth; a known secret under another name is refused", () => {
    const seed = "SUAEXAMPLESEEDEXAMPLESEEDEXAMPLESEEDEXAMPLESEEDEXAMPLE";
    const reply = { ok: true, credential: { user: "u", seed, nkey: "UABC" }, list: [{ sealed: "blob", secret: "s", password: "p", name: "n" }] };
    assert.deepEqual(withoutSecrets(reply), { ok: true, credential: { user: "u", nkey: "UABC" }, list: [{ name: "n" }] });
    const text = safeJson(reply, [seed]);
    assert.deepEqual(leaksIn(text, [seed, "blob"]), []);
    assert.throws(() => safeJson({ note: `it is ${seed}` }, [seed]), /held a secret/);
    assert.deepEqual(leaksIn("anything", [""]), [], "an empty secret matches nothing");
  });

  it("edges: claims (held on its nodes), uses, follows and tool calls, each once; modules without edges keep their box", () => {
    const modules = [
      { name: "show", claims: [], uses: ["build", "greeter/greet"], follows: [{ seat: "build", event: "built" }] },
      { name: "builder", claims: ["build"], uses: [], follows: [] },
      { name: "lonely", claims: [], uses: [], follows: [] },
    ];
    const edges = edgesOf(modules, [{ name: "build", holders: ["alpha"] }]);
    assert.deepEqual(edges.map((e) => `${e.module} ${e.kind} ${e.target}`), [
      "builder claims build", "show follows build", "show uses build", "show calls greeter/greet",
    ]);
    assert.equal(edges[0]!.label, "holds on alpha", "a seat's holders are the nodes its claimant runs on");
    assert.equal(edgesOf(modules, [])[0]!.label, "claims");
    const layout = layoutOf(modules.map((m) => m.name), edges);
    assert.deepEqual(layout.modules, ["builder", "lonely", "show"]);
    assert.deepEqual(layout.targets, ["build", "greeter/greet"]);
  });

  it("pages: 10,000 rows are 50 pages of 200; a page out of range is the nearest", () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => i);
    const first = pageOf(rows, 0);
    assert.equal(first.items.length, 200);
    assert.equal(first.pages, 50);
    assert.equal(pageOf(rows, 49).items[199], 9_999);
    assert.equal(pageOf(rows, 99).page, 49);
    assert.equal(pageOf(rows, -1).page, 0);
    assert.deepEqual(pageOf([], 0), { items: [], page: 0, pages: 1, total: 0 });
  });
});
