/**
 * `npm run bench -- ui [--nodes 10000] [--json]` (in the table: `--only ui`): `mesh ui`'s first
 * view at N nodes (issue 30: "usable at 10,000 nodes, the first view in under 1 s").
 *
 * A nats-server and the test harness's controller (genesis recorded); N nodes enrolled as
 * node.enrol records them (an X25519 key and an nkey each), written straight into the records in
 * commits of 1,000 (no real host: the controller folds them as any commit); one push to every node
 * (so the records hold what each was sent, and `pushes` has something to read); each node's report
 * of what it was sent. Then, in the same run, best of ROUNDS each:
 * - raw: the operator's client reading what the overview shows, through the same queries the
 *   page's server sends (nodes and reports every page, modules, seats, pushes): the controller's
 *   replies, nothing drawn;
 * - cold: the ui server started and the page opened at once in Chromium (playwright-core,
 *   /usr/bin/chromium): from the navigation to the first view drawn (the page's `mesh:first-view`
 *   mark), the server's first read included; and to the whole overview (the first node's report);
 * - warm: a fresh page opened on the running server (its overview read): navigation to first view;
 * - first byte: /api/overview's answer on the running server (one page of each list and the pushes).
 */
import { existsSync } from "node:fs";
import { startNatsServer } from "../../test/support/natsServer.ts";
import { controllerFixture } from "../../test/support/controller.ts";
import { openCatalogue } from "../../src/records/catalogue.ts";
import { meshClient } from "../../src/client/client.ts";
import { newNodeKeyPair, newUserKey } from "../../src/crypto/secrets.ts";
import { busUser } from "../../src/names.ts";
import { meshReader } from "../../src/cli/ui.ts";
import { startUi } from "../../src/ui/server.ts";
import type { MeshEvent } from "../../src/events/index.ts";
import type { Page } from "playwright-core";
import { option } from "./args.ts";

/** The browser the bench drives (Debian's chromium), as the browser test. */
export const CHROMIUM = "/usr/bin/chromium";
/** Measurements of each kind; the best is reported (the machine is shared). */
const ROUNDS = 3;

export type UiRow = {
  nodes: number;
  /** The client's reads of what the overview shows (ms). */
  rawMs: number;
  /** `nodes` alone, every page (ms). */
  nodesQueryMs: number;
  /** Navigation → first view drawn, server just started (ms). */
  coldMs: number;
  /** goto → the first node's report drawn, server just started: the whole overview (ms). */
  coldWholeMs: number;
  /** Navigation → first view drawn, server's overview already read (ms). */
  warmMs: number;
  /** /api/overview answered on the running server (ms). */
  firstByteMs: number;
  /** Bytes of that answer. */
  overviewBytes: number;
};

const best = (values: number[]) => Math.round(Math.min(...values));

/** Writes N nodes into the records as node.enrol does (key pair, nkey credential), 1,000 a commit. */
async function enrolMany(nc: Parameters<typeof openCatalogue>[0], address: string, nodes: number): Promise<void> {
  const catalogue = await openCatalogue(nc);
  const at = new Date().toISOString();
  for (let start = 0; start < nodes; start += 1000) {
    const commandId = `bench-ui-nodes-${start}`;
    const meta = { actor: "operator-test", commandId, at };
    const events: MeshEvent[] = [];
    for (let i = start; i < Math.min(nodes, start + 1000); i += 1) {
      const node = `node-${String(i).padStart(5, "0")}`;
      events.push({ ...meta, type: "NodeEnrolled", node, publicKey: newNodeKeyPair().publicKey });
      events.push({ ...meta, type: "CredentialMinted", principal: { kind: "node", name: node }, user: busUser("node", node), nkey: newUserKey().publicKey, address });
    }
    const result = await catalogue.transact(commandId, () => ({ ok: true, entity: { kind: "bench", id: `ui-nodes-${start}` }, events }));
    if (!result.ok) throw new Error(result.refusal.message);
  }
}

/** Milliseconds from the page's navigation to its first view drawn (the page's `mesh:first-view` mark). */
async function firstView(page: Page): Promise<number> {
  await page.waitForFunction(() => performance.getEntriesByName("mesh:first-view").length > 0, undefined, { timeout: 120_000, polling: 50 });
  return page.evaluate(() => performance.getEntriesByName("mesh:first-view")[0]!.startTime);
}

/** One measurement at `nodes` nodes (see the module comment). */
export async function measureUi(nodes: number, log: (line: string) => void = (line) => console.error(line)): Promise<UiRow> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install chromium`);
  const server = await startNatsServer({ config: "max_payload: 1048576" });
  const fixture = await controllerFixture(server);
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  try {
    const controller = await fixture.start();
    let t = performance.now();
    await enrolMany(fixture.operator, server.url, nodes);
    log(`  ui: ${nodes} nodes recorded in ${Math.round(performance.now() - t)} ms`);
    const client = meshClient(fixture.operator, "operator-test", { timeoutMs: 600_000 });
    t = performance.now();
    const pushed = await client.push({});
    if (!pushed.ok) throw new Error(`push refused: ${pushed.error.message}`);
    log(`  ui: pushed to ${pushed.nodes.length} nodes in ${Math.round(performance.now() - t)} ms`);
    for (const n of pushed.nodes) if (n.digest !== undefined) fixture.report(n.node, n.digest);
    await fixture.operator.flush();

    const reader = meshReader(client);
    const raw: number[] = [];
    const nodesQuery: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      t = performance.now();
      const overview = await reader.overview();
      raw.push(performance.now() - t);
      if (overview.nodes.length !== nodes) throw new Error(`the overview read ${overview.nodes.length} nodes, not ${nodes}`);
      t = performance.now();
      await client.everyPage("nodes");
      nodesQuery.push(performance.now() - t);
    }

    const cold: number[] = [];
    const coldWhole: number[] = [];
    const warm: number[] = [];
    const firstByte: number[] = [];
    let overviewBytes = 0;
    const firstRow = '[data-report="node-00000"]';
    for (let round = 0; round < ROUNDS; round += 1) {
      const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
      const ui = await startUi({ reader, host: "127.0.0.1", port: 0, secrets: [], watch: () => () => undefined });
      try {
        let page = await context.newPage();
        t = performance.now();
        await page.goto(ui.url);
        cold.push(await firstView(page));
        // The whole overview: the first node's report drawn (the page re-draws at the server's change).
        await page.locator(`${firstRow}.applied`).waitFor({ timeout: 120_000 });
        coldWhole.push(performance.now() - t);
        await page.close();
        page = await context.newPage();
        await page.goto(ui.url);
        warm.push(await firstView(page));
        const cookie = (await context.cookies())[0];
        t = performance.now();
        const answer = await fetch(`${ui.url.split("?")[0]}api/overview`, { headers: { cookie: `${cookie!.name}=${cookie!.value}` } });
        const text = await answer.text();
        firstByte.push(performance.now() - t);
        overviewBytes = Buffer.byteLength(text);
        if ((await page.locator("[data-report]").count()) > 200) throw new Error("the page drew more than one page of nodes");
      } finally {
        await ui.stop();
        await context.close();
      }
    }
    await controller.stop();
    return { nodes, rawMs: best(raw), nodesQueryMs: best(nodesQuery), coldMs: best(cold), coldWholeMs: best(coldWhole), warmMs: best(warm), firstByteMs: best(firstByte), overviewBytes };
  } finally {
    await browser.close();
    await fixture.close();
    await server.stop();
  }
}

/** `--nodes 10000` (default); prints the row as JSON. */
export async function run(args: string[]): Promise<void> {
  const nodes = Number(option(args, "--nodes") ?? 10_000);
  if (!Number.isInteger(nodes) || nodes < 1) throw new Error("--nodes takes a positive whole number");
  console.log(JSON.stringify(await measureUi(nodes), null, 2));
}
