/**
 * Serves one Prometheus registry over HTTP (node:http): `GET /metrics` answers the exposition
 * text, anything else 404. Off unless `--metrics <host:port>` is given; a port alone listens on
 * 127.0.0.1 (a local port: the numbers say what the mesh is doing, not for every network).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

/** Where the metrics listen. */
export type MetricsListen = { host: string; port: number };

/** The path the metrics are served on. */
export const METRICS_PATH = "/metrics";

/**
 * Reads `--metrics`: `<port>` (on 127.0.0.1), `<host>:<port>` or `[<ipv6>]:<port>`; port 0 picks
 * a free one. Returns the listen address, or `problem` naming what is wrong and the fix.
 */
export function parseMetricsListen(text: string): { ok: true; value: MetricsListen } | { ok: false; problem: string } {
  const match = /^(?:(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):)?(\d{1,5})$/.exec(text.trim());
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65_535) return { ok: false, problem: `"${text}" is not <port> or <host>:<port> (e.g. 9464 or 127.0.0.1:9464)` };
  return { ok: true, value: { host: match[1] ?? match[2] ?? "127.0.0.1", port } };
}

/** A running metrics endpoint: its URL (the port it got) and how to stop it. */
export type MetricsServer = { url: string; stop(): Promise<void> };

/** Listens on `listen` and serves `registry` at METRICS_PATH until `stop()`. Rejects when the address cannot be bound (in use, not local). */
export async function serveMetrics(registry: Registry, listen: MetricsListen): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "").split("?")[0];
    if (path !== METRICS_PATH || (request.method !== "GET" && request.method !== "HEAD")) {
      response.writeHead(404, { "content-type": "text/plain" }).end(`metrics are at ${METRICS_PATH}\n`);
      return;
    }
    registry.metrics().then(
      (text) => { response.writeHead(200, { "content-type": registry.contentType }).end(request.method === "HEAD" ? undefined : text); },
      (error: unknown) => { response.writeHead(500, { "content-type": "text/plain" }).end(`metrics could not be collected: ${error instanceof Error ? error.message : String(error)}\n`); },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => { server.off("error", reject); resolve(); });
  });
  const { port } = server.address() as AddressInfo;
  const host = listen.host.includes(":") ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host}:${port}${METRICS_PATH}`,
    stop: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
