/**
 * `mesh ui`'s web server (issue 30): node:http, read-only, on a local port. Every request must
 * carry the random token (guard.ts); every answer carries a strict Content-Security-Policy (no
 * inline script: the page's JS is a file); every JSON goes through safeJson (no secret, R3). The
 * mesh is read through `reader` (the controller's query verbs); `watch` tells of each change heard
 * on the bus, after which the overview is read again and pushed to the pages as a server-sent event.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TOKEN_COOKIE, admitted, newToken, safeJson, tokenOf } from "./guard.ts";
import { edgesOf, layoutOf } from "./graph.ts";
import type { ModuleView, PushView, SeatView } from "../contracts/verbs.ts";
import { pushesShown, type NodeSeen } from "./pushes.ts";

/** Rows a list page holds: 10,000 nodes are 50 pages, each drawn at once. */
export const UI_PAGE = 200;
/** Milliseconds a burst of bus changes is gathered before one read. */
export const UI_DEBOUNCE_MS = 100;

/** The policy every answer carries: nothing but this server's own files, no inline script or style. */
export const CONTENT_SECURITY_POLICY = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** What the overview shows: every node (with its last report, as `mesh get nodes`), module and seat, and the last pushes (`pushes`). */
export type Overview = {
  nodes: Array<Record<string, unknown> & NodeSeen>; modules: ModuleView[]; seats: SeatView[]; pushes: PushView[];
  /** True in the first view drawn before the nodes' last reports (and the pushes) were read. */
  reportsPending?: boolean;
};

/** How the server reads the mesh (src/cli/ui.ts gives it the controller's query verbs). Each rejects or answers a refusal `{ok:false,error}`. */
export type MeshReader = {
  /** The whole overview; `early` is told a first one without reports when the lists alone came first. */
  overview(early?: (partial: Overview) => void): Promise<Overview>;
  history(kind: string, id: string): Promise<unknown>;
  explain(kind: string, name: string): Promise<unknown>;
};

export type UiOptions = {
  reader: MeshReader;
  host: string;
  port: number;
  /** Strings never to send (the operator credential's seed): a reply holding one is answered 500. */
  secrets: readonly string[];
  /** Calls `changed` at each change heard on the bus; returns how to stop. */
  watch(changed: () => void): () => void;
  /** The token to require (a fresh random one by default). */
  token?: string;
  /** The folder of the page's files (default: static/ beside this file); a bundled CLI names it, as its chunk is not there. */
  staticDir?: string;
};

/** A running ui: its address with the token (what to open), and how to stop it. */
export type UiServer = { url: string; token: string; stop(): Promise<void> };

const STATIC: Record<string, { file: string; type: string }> = {
  "/": { file: "index.html", type: "text/html; charset=utf-8" },
  "/static/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/static/app.css": { file: "app.css", type: "text/css; charset=utf-8" },
};

/** Where the page's files are by default: beside this file (scripts/build.mjs copies them into dist/). */
const STATIC_DIR = fileURLToPath(new URL("./static/", import.meta.url));

const HEADERS = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "x-frame-options": "DENY",
};

/** One page of `items`: `page` counts from 0; out-of-range pages are clamped. */
export function pageOf<T>(items: readonly T[], page: number, size = UI_PAGE): { items: T[]; page: number; pages: number; total: number } {
  const pages = Math.max(1, Math.ceil(items.length / size));
  const p = Math.min(Math.max(0, Number.isInteger(page) ? page : 0), pages - 1);
  return { items: items.slice(p * size, (p + 1) * size), page: p, pages, total: items.length };
}

/** The overview as last read, re-read at each change `watch` tells of (debounced); `listeners` hear each new version. */
type Live = { current: Promise<Overview>; version: number; listeners: Set<(version: number) => void>; stop(): void };

function liveOverview(reader: MeshReader, watch: UiOptions["watch"]): Live {
  let timer: NodeJS.Timeout | undefined;
  // One read at a time: at 10,000 nodes a read takes seconds and reports come all the while, so
  // changes heard during a read ask for one more read after it, not one read each.
  let reading = true;
  let again = false;
  const tell = (overview: Overview): void => {
    live.current = Promise.resolve(overview);
    live.version += 1;
    for (const listener of live.listeners) listener(live.version);
  };
  const done = (): void => {
    reading = false;
    if (again) { again = false; schedule(); }
  };
  const refresh = (): void => {
    timer = undefined;
    if (reading) { again = true; return; }
    reading = true;
    // A failed read keeps the last good one; the next change reads again.
    reader.overview().then(tell, () => undefined).finally(done);
  };
  const schedule = (): void => { timer ??= setTimeout(refresh, UI_DEBOUNCE_MS); };
  const stopWatch = watch(schedule);
  // The first view is drawn from the first overview that comes: the lists without the reports
  // (`early`) when they come first; the whole one then follows as a change.
  let early = false;
  let settle: (first: Overview) => void = () => undefined;
  const whole = reader.overview((partial) => { early = true; settle(partial); });
  const first = new Promise<Overview>((resolve, reject) => { settle = resolve; whole.then(resolve, reject); });
  whole.then((overview) => { if (early) tell(overview); }, () => undefined).finally(done);
  // Asked by a page, a failed first read answers 502; unasked, it must not end the process.
  first.catch(() => undefined);
  const live: Live = {
    current: first, version: 0, listeners: new Set(),
    stop() { stopWatch(); if (timer !== undefined) clearTimeout(timer); },
  };
  return live;
}

/** The status and JSON value answering an `/api/...` request. Rejects when the mesh cannot be read. */
async function apiAnswer(url: URL, live: Live, reader: MeshReader): Promise<{ status: number; value: unknown }> {
  const q = (name: string): string => url.searchParams.get(name) ?? "";
  const page = (name: string): number => Number(url.searchParams.get(name) ?? "0");
  const notFound = (what: string) => ({ status: 404, value: { ok: false, error: { code: "not-found", message: `no ${what}` } } });
  const version = live.version;
  switch (url.pathname) {
    case "/api/overview": {
      const o = await live.current;
      return { status: 200, value: {
        ok: true, version, reportsPending: o.reportsPending === true, nodes: pageOf(o.nodes, page("nodes")), modules: pageOf(o.modules, page("modules")), seats: pageOf(o.seats, page("seats")),
        pushes: pushesShown(o.pushes, o.nodes),
      } };
    }
    case "/api/graph": {
      const o = await live.current;
      return { status: 200, value: { ok: true, version, ...layoutOf(o.modules.map((m) => m.name), edgesOf(o.modules, o.seats)) } };
    }
    case "/api/item": {
      const o = await live.current;
      const list: Array<{ name: string }> = q("kind") === "node" ? o.nodes : q("kind") === "module" ? o.modules : q("kind") === "seat" ? o.seats : [];
      const item = list.find((i) => i.name === q("name"));
      return item === undefined ? notFound(`${q("kind")} ${q("name")}`) : { status: 200, value: { ok: true, version, item } };
    }
    case "/api/history": return { status: 200, value: await reader.history(q("kind"), q("id")) };
    case "/api/explain": return { status: 200, value: await reader.explain(q("kind"), q("name")) };
    default: return notFound(url.pathname);
  }
}

/** Writes `value` as JSON through safeJson: a reply holding a known secret is answered 500 instead. */
function sendJson(response: ServerResponse, status: number, value: unknown, secrets: readonly string[]): void {
  let text: string;
  try {
    text = safeJson(value, secrets);
  } catch (error) {
    status = 500;
    text = JSON.stringify({ ok: false, error: { code: "internal", message: error instanceof Error ? error.message : String(error) } });
  }
  response.writeHead(status, { ...HEADERS, "content-type": "application/json; charset=utf-8" }).end(text);
}

/** Starts the server; resolves once it listens. Rejects when the address cannot be bound. */
export async function startUi(options: UiOptions): Promise<UiServer> {
  const token = options.token ?? newToken();
  const live = liveOverview(options.reader, options.watch);
  const streams = new Set<ServerResponse>();
  const tell = (version: number): void => { for (const s of streams) s.write(`event: change\ndata: ${version}\n\n`); };
  live.listeners.add(tell);

  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const url = new URL(request.url ?? "/", "http://ui.invalid");
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { ...HEADERS, "content-type": "text/plain" }).end("read-only\n");
      return;
    }
    if (!admitted(url, request.headers.cookie, token)) {
      response.writeHead(401, { ...HEADERS, "content-type": "text/plain" }).end("mesh ui: open the address `mesh ui` printed (it carries the token)\n");
      return;
    }
    // The token came in the query (the printed address): keep it as a cookie, so links and the event stream carry it.
    const cookie = tokenOf(url, request.headers.cookie)?.from === "query" ? { "set-cookie": `${TOKEN_COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/` } : {};
    const file = STATIC[url.pathname];
    if (file !== undefined) {
      response.writeHead(200, { ...HEADERS, ...cookie, "content-type": file.type }).end(readFileSync(join(options.staticDir ?? STATIC_DIR, file.file)));
      return;
    }
    if (url.pathname === "/events") {
      response.writeHead(200, { ...HEADERS, "content-type": "text/event-stream", connection: "keep-alive" });
      response.write(`event: change\ndata: ${live.version}\n\n`);
      streams.add(response);
      request.on("close", () => streams.delete(response));
      return;
    }
    apiAnswer(url, live, options.reader).then(
      (answer) => sendJson(response, answer.status, answer.value, options.secrets),
      (error: unknown) => sendJson(response, 502, { ok: false, error: { code: "unavailable", message: error instanceof Error ? error.message : String(error) } }, options.secrets),
    );
  };

  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    token,
    url: `http://${host}:${address.port}/?token=${token}`,
    async stop() {
      live.stop();
      for (const s of streams) s.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
