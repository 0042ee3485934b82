// mesh ui's page (issue 30): plain DOM, no framework, no inline script (the server's CSP forbids it).
// Every text from the mesh goes in with textContent, never as HTML. The server keeps the token as a
// cookie, so fetch and EventSource carry it.
"use strict";

const main = document.getElementById("main");
const live = document.getElementById("live");
const pages = { nodes: 0, modules: 0, seats: 0 };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
const link = (href, text) => el("a", { href }, text);

/** The newest version of the mesh a drawing used (the server numbers each re-read); -1 before the first. */
let drawnVersion = -1;

async function get(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  const answer = await response.json();
  if (typeof answer.version === "number") drawnVersion = Math.max(drawnVersion, answer.version);
  return answer;
}

function table(headers, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))));
}

function pager(name, list) {
  const box = el("div", { class: "pager" });
  const go = (p) => el("button", { type: "button", "data-page": `${name}:${p}` }, p < list.page ? "‹ previous" : "next ›");
  if (list.page > 0) box.append(go(list.page - 1));
  box.append(el("span", { class: "muted" }, `page ${list.page + 1} of ${list.pages} (${list.total} ${name})`));
  if (list.page + 1 < list.pages) box.append(go(list.page + 1));
  return box;
}

/** Applied, behind or failed: what the node last reported against what it was last sent. */
function reportState(node, pending) {
  if (pending) return ["none", "reading the reports…"];
  const last = node.lastReport;
  if (!last) return node.lastSent ? ["behind", "behind: no report yet"] : ["none", "never sent"];
  if (last.outcome === "failed") return ["failed", `failed: ${last.error || ""}`];
  if (last.outcome === "applied-older") return ["behind", "behind (applied an older one)"];
  return ["applied", `applied at ${last.at}`];
}

function runStates(node) {
  const runs = (node.lastReport && node.lastReport.modules) || [];
  const box = el("span", {});
  for (const m of runs) {
    box.append(link(`#/module/${m.module}`, m.module), " ", el("span", { class: `state-${m.state}`, "data-run": `${node.name}/${m.module}` }, m.state), "  ");
  }
  return box;
}

/** A push's outcomes in words: the counts of its nodes by outcome, then each node it lists. */
function pushOutcomes(p) {
  const counts = Object.entries(p.counts).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(", ");
  const box = el("span", {}, el("span", { class: "muted" }, counts || "-"), el("br", {}));
  for (const o of p.outcomes) {
    const title = o.outcome === "failed" ? `failed: ${o.error}` : o.at ? `${o.outcome} at ${o.at}` : o.outcome;
    box.append(link(`#/node/${o.node}`, o.node), " ", el("span", { class: `outcome-${o.outcome}`, "data-push-node": `${p.id}/${o.node}`, title }, o.outcome), "  ");
  }
  if (p.sent > p.outcomes.length) box.append(el("span", { class: "muted" }, `(and ${p.sent - p.outcomes.length} more)`));
  return box;
}

function pushesSection(pushes) {
  const rows = pushes.map((p) => [el("code", { "data-push": p.id }, p.id), p.at, p.actor, String(p.sent), pushOutcomes(p)]);
  return el("section", {}, el("h2", {}, "Last pushes"),
    pushes.length === 0 ? el("p", { class: "muted" }, "no push in the records yet") : table(["push", "at", "by", "nodes sent", "outcomes (from the nodes' last reports)"], rows));
}

async function overview() {
  const o = await get(`/api/overview?nodes=${pages.nodes}&modules=${pages.modules}&seats=${pages.seats}`);
  const nodes = o.nodes.items.map((n) => {
    const [cls, text] = reportState(n, o.reportsPending);
    return [link(`#/node/${n.name}`, n.name), el("span", { class: cls, "data-report": n.name }, text), n.modules.join(", ") || "-", runStates(n)];
  });
  const seats = o.seats.items.map((s) => [link(`#/seat/${s.name}`, s.name), s.protocol, s.declaredBy, s.holders.join(", ") || "-", s.claimants.join(", ") || "-"]);
  const modules = o.modules.items.map((m) => [link(`#/module/${m.name}`, m.name), m.version, el("span", { "data-nodes": m.name }, m.nodes.join(", ") || "-"), m.issued ? "yes" : "no", link(`#/explain/module/${m.name}`, "explain")]);
  return [
    el("section", {}, el("h2", {}, "Nodes"), table(["node", "last report", "modules assigned", "modules running"], nodes), pager("nodes", o.nodes)),
    pushesSection(o.pushes || []),
    el("section", {}, el("h2", {}, "Seats"), table(["seat", "protocol", "declared by", "holders", "claimants"], seats), pager("seats", o.seats)),
    el("section", {}, el("h2", {}, "Modules"), table(["module", "version", "nodes", "issued", "grants"], modules), pager("modules", o.modules)),
  ];
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

const BOW = { claims: 0, uses: 0, follows: 22, calls: -22 };
async function graph() {
  const g = await get("/api/graph");
  const row = 34, width = 200, gap = 320, top = 20;
  const y = (i) => top + i * row;
  const at = (list, name) => list.indexOf(name);
  const height = top * 2 + Math.max(g.modules.length, g.targets.length, 1) * row;
  const picture = svg("svg", { width: width * 2 + gap + 40, height, viewBox: `0 0 ${width * 2 + gap + 40} ${height}`, role: "img", "aria-label": "who may talk to whom" });
  for (const e of g.edges) {
    const y1 = y(at(g.modules, e.module)) + 12, y2 = y(at(g.targets, e.target)) + 12;
    const x1 = 10 + width, x2 = 10 + width + gap;
    const a = svg("a", { href: `#/explain/module/${e.module}`, "data-edge": `${e.module} ${e.kind} ${e.target}` },
      svg("title", {}, `${e.module} ${e.label} ${e.target}: see explain`),
      // follows bows away from uses, so two edges between the same pair stay apart.
      svg("path", { class: `edge edge-${e.kind}`, d: `M${x1},${y1} C${x1 + gap / 2},${y1 + BOW[e.kind]} ${x2 - gap / 2},${y2 + BOW[e.kind]} ${x2},${y2}` }));
    picture.append(a);
  }
  g.modules.forEach((m, i) => picture.append(svg("a", { href: `#/module/${m}` }, svg("rect", { class: "box", x: 10, y: y(i), width, height: 24, rx: 4 }), svg("text", { x: 18, y: y(i) + 16 }, m))));
  g.targets.forEach((t, i) => picture.append(svg("a", { href: t.includes("/") ? `#/module/${t.split("/")[0]}` : `#/seat/${t}` }, svg("rect", { class: "seat", x: 10 + width + gap, y: y(i), width, height: 24, rx: 4 }), svg("text", { x: 18 + width + gap, y: y(i) + 16 }, t))));
  const legend = el("p", { class: "legend" }, ...["claims", "uses", "follows", "calls"].map((k) => el("span", { class: `key key-${k}` }, k === "calls" ? "calls a tool" : k)));
  const list = table(["module", "may", "seat or tool"], g.edges.map((e) => [link(`#/module/${e.module}`, e.module), link(`#/explain/module/${e.module}`, e.label), e.target]));
  return [el("section", {}, el("h2", {}, "Who may talk to whom"),
    el("p", { class: "muted" }, "modules (left) to seats and tools (right): each edge links to the grants `mesh explain` gives (hover for what it is)"), legend, picture),
  el("section", {}, el("h2", {}, "Edges"), list)];
}

function fields(item) {
  return table(["field", "value"], Object.entries(item).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
}

async function historyTable(kind, id) {
  const h = await get(`/api/history?kind=${encodeURIComponent(kind)}&id=${encodeURIComponent(id)}`);
  if (!h.ok) return el("p", { class: "muted" }, `history: ${h.error ? h.error.message : "none"}`);
  return table(["#", "at", "actor", "command", "what"], h.events.slice().reverse().map((e) => [e.sequence, e.at, e.actor, el("code", {}, e.commandId), e.summary]));
}

async function item(kind, name) {
  const found = await get(`/api/item?kind=${kind}&name=${encodeURIComponent(name)}`);
  const head = [el("h2", {}, `${kind} ${name}`)];
  if (kind === "module") head.push(el("p", {}, link(`#/explain/module/${name}`, "its grants (explain)")));
  return [
    el("section", {}, ...head, found.ok ? fields(found.item) : el("p", { class: "muted" }, found.error.message)),
    el("section", {}, el("h2", {}, "History"), await historyTable(kind, name)),
  ];
}

async function explain(kind, name) {
  const x = await get(`/api/explain?kind=${kind}&name=${encodeURIComponent(name)}`);
  if (!x.ok) return [el("section", {}, el("h2", {}, `explain ${kind} ${name}`), el("p", {}, x.error.message))];
  return [el("section", {}, el("h2", {}, `explain ${kind} ${name}: what it may publish and subscribe`),
    table(["direction", "subject", "because"], x.grants.map((g) => [g.direction, el("code", {}, g.subject), g.because])))];
}

let drawing = Promise.resolve();
/** Draws the view the address names; with `atLeast`, only when the page has not drawn that version yet. */
function draw(atLeast) {
  drawing = drawing.then(async () => {
    if (atLeast !== undefined && drawnVersion >= atLeast) return;
    const [, view, a, b] = location.hash.split("/");
    let parts;
    try {
      if (view === "graph") parts = await graph();
      else if (view === "node" || view === "module" || view === "seat") parts = await item(view, decodeURIComponent(a));
      else if (view === "explain") parts = await explain(a, decodeURIComponent(b));
      else parts = await overview();
    } catch (error) {
      parts = [el("p", {}, `could not read the mesh: ${error}`)];
    }
    main.replaceChildren(...parts);
    // The first view drawn: what `npm run bench -- ui` reads (performance.getEntriesByName).
    if (performance.getEntriesByName("mesh:first-view").length === 0) performance.mark("mesh:first-view");
  });
  return drawing;
}

main.addEventListener("click", (event) => {
  const target = event.target.closest("button[data-page]");
  if (!target) return;
  const [name, page] = target.getAttribute("data-page").split(":");
  pages[name] = Number(page);
  draw();
});
window.addEventListener("hashchange", () => draw());

// Drop the token from the address bar: the cookie carries it from here on.
if (location.search.includes("token=")) history.replaceState(null, "", location.pathname + location.hash);

draw();
const events = new EventSource("/events");
events.addEventListener("change", (e) => {
  live.textContent = `live (change ${e.data})`;
  // The stream opens with the version now: drawn already unless a change came between.
  draw(Number(e.data));
});
events.onerror = () => { live.textContent = "reconnecting…"; };
