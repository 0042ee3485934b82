/**
 * `mesh ui [--listen host:port]` (issue 30): a local, read-only web page of the mesh, read over the
 * bus with the operator's credential through the same queries `mesh get`, `pushes`, `history` and `explain`
 * send, and drawn again as the bus carries each change (the records' commits and the nodes'
 * reports, as --watch hears them). It prints its address with a random token; Ctrl-C stops it.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { clientOf, EXIT_OK, UsageError, loadCredential, type CliContext } from "./context.ts";
import { readItems } from "./get.ts";
import { lastReportOf, reportsOf } from "./lastReport.ts";
import { WATCHED_SUBJECTS } from "./watch.ts";
import { parseMetricsListen } from "../metrics/serve.ts";
import type { MeshReader, Overview } from "../ui/server.ts";
import { UI_PUSHES } from "../ui/limits.ts";
import { packageFile, packageLayout } from "../files/packageFiles.ts";
import type { MeshClient } from "../client/client.ts";
import type { CliVerb } from "./busVerb.ts";
import type { ModuleView, NodeView, PushView, Refusal, SeatView } from "../contracts/verbs.ts";

/** The newest UI_PUSHES pushes (`pushes`); none when the controller refuses (one older than the verb): the page says so by an empty list. */
async function lastPushes(client: MeshClient): Promise<PushView[]> {
  const reply = await client.pushes({ limit: UI_PUSHES });
  return reply.ok ? reply.pushes : [];
}

/** The reads the page makes, through the controller's query verbs; a refused list is thrown (the page says so). */
export function meshReader(client: MeshClient): MeshReader {
  const refused = (kind: string, error: Refusal): Error => new Error(`the controller refused the ${kind}s (${error.code}): ${error.message}`);
  const items = async (kind: "module" | "seat"): Promise<Array<Record<string, unknown>>> => {
    const read = await readItems(client, kind);
    if (!read.ok) throw refused(kind, read.error);
    return read.items;
  };
  return {
    async overview(early): Promise<Overview> {
      // The lists first: each is one reply a page (R59). The nodes' last reports are read a node
      // at a time by the controller (R55): at 10,000 nodes, seconds. The page is drawn from the
      // lists meanwhile (`early`), its reports marked as still being read.
      const [nodes, modules, seats] = await Promise.all([client.everyPage("nodes"), items("module"), items("seat")]);
      if (!nodes.ok) throw refused("node", nodes.error);
      const lists = { modules: modules as ModuleView[], seats: seats as SeatView[] };
      early?.({ nodes: nodes.nodes, ...lists, pushes: [], reportsPending: true });
      const [reports, pushes] = await Promise.all([reportsOf(client, nodes.nodes.map((n) => n.name)), lastPushes(client)]);
      const withReports = nodes.nodes.map((n: NodeView) => ({ ...n, lastReport: reports === null ? null : lastReportOf(n.lastSent?.digest, reports.get(n.name)) }));
      return { nodes: withReports, ...lists, pushes };
    },
    history: (kind, id) => client.ask("history", { kind, id } as never),
    explain: (kind, name) => client.ask("explain", { kind, name } as never),
  };
}

/** Calls `changed` at each message on WATCHED_SUBJECTS; returns how to stop hearing them. */
export function busWatch(nc: NatsConnection, changed: () => void, refused: (line: string) => void): () => void {
  const subscriptions = WATCHED_SUBJECTS.map((subject) => nc.subscribe(subject, {
    callback: (error) => {
      if (error) refused(`mesh ui: the bus refused to let this operator hear ${subject} (${error.message.split("\n")[0]}): the page is not live until the mesh's next push grants it`);
      else changed();
    },
  }));
  return () => { for (const s of subscriptions) s.unsubscribe(); };
}

/** The secrets of the credential `file` that the server must never send. */
function secretsOf(file: string): string[] {
  const credential = loadCredential(file);
  return [credential.seed ?? "", credential.password ?? ""].filter((s) => s !== "");
}

export const UI_CLI_VERB: CliVerb = {
  path: ["ui"],
  summary: "serve a local, read-only web page of the mesh (nodes, modules running, seats, who may talk to whom, history), live as the bus changes",
  examples: [["open the page on a free local port", "mesh ui"], ["on a port of your choosing", "mesh ui --listen 127.0.0.1:8080"]],
  options: [{ flags: "--listen <host:port>", description: "where to listen: <port> (on 127.0.0.1) or <host>:<port> (default 127.0.0.1 and a free port)" }],
  globals: ["credential", "timeout"],
  async run(ctx: CliContext, _args, options) {
    const parsed = parseMetricsListen(options.listen === undefined ? "0" : String(options.listen));
    if (!parsed.ok) throw new UsageError(`ui: --listen: ${parsed.problem}`);
    const nc = await ctx.connection();
    // The server's code is read only by `mesh ui` (issue 29: every other verb starts without it).
    const { startUi } = await import("../ui/server.ts");
    const ui = await startUi({
      reader: meshReader(await clientOf(ctx)),
      ...parsed.value,
      secrets: secretsOf(ctx.globals.credential),
      // Named from the package's root: a bundled CLI's chunk is not beside the page's files.
      staticDir: packageLayout().built ? packageFile("dist", "src", "ui", "static") : packageFile("src", "ui", "static"),
      watch: (changed) => busWatch(nc, changed, ctx.err),
    });
    ctx.out(`mesh ui: open ${ui.url}`);
    ctx.out("(the token in it is this page's key: share it with no one; Ctrl-C stops the server)");
    await new Promise<void>((resolve) => {
      const remove = ctx.io.onInterrupt?.(() => { remove?.(); resolve(); });
      void nc.closed().then(() => resolve());
    });
    await ui.stop();
    return EXIT_OK;
  },
};
