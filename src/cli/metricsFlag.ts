/**
 * `--metrics <host:port>` of `mesh controller` and `mesh host` (issue 30): off unless given; a
 * port alone listens on 127.0.0.1. The verbs load prom-client's metrics only when it is given.
 */
import { UsageError } from "./context.ts";
import { parseMetricsListen, serveMetrics, type MetricsListen } from "../metrics/serve.ts";
import type { Registry } from "prom-client";

/** The option as the verbs list it. */
export const METRICS_OPTION = { flags: "--metrics <host:port>", description: "serve Prometheus metrics at http://<host:port>/metrics (a port alone: 127.0.0.1; default off)" };

/** Where `--metrics` asks to listen, or undefined when it is not given. Throws UsageError naming the flag and the fix. */
export function metricsListenOf(options: Readonly<Record<string, unknown>>): MetricsListen | undefined {
  if (options.metrics === undefined) return undefined;
  const parsed = parseMetricsListen(String(options.metrics));
  if (!parsed.ok) throw new UsageError(`--metrics: ${parsed.problem}`);
  return parsed.value;
}

/** Serves `registry` on `listen` and says where on `say`; returns how to stop it. */
export async function serveMetricsAt(registry: Registry, listen: MetricsListen, say: (line: string) => void): Promise<() => Promise<void>> {
  const served = await serveMetrics(registry, listen);
  say(`metrics at ${served.url}`);
  return served.stop;
}
