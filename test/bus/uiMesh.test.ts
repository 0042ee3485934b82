/**
 * `mesh ui` over a whole mesh made by `mesh up` (issue 30): the greeter example runs through its
 * node's agent (the runner, R72), and the page, in Debian's Chromium, shows it running, then
 * shows a module assigned by the CLI (`mesh assign`, as typed) within 1 s without a reload. Its
 * screenshot is kept in test-artifacts/; MESH_UPDATE_SCREENSHOTS=1 renews docs/ui.png (the README's).
 */
import { artifactsDir } from "../support/artifacts.ts";
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { operatorUser, EXAMPLES_DIR } from "../../src/up/up.ts";
import { localMesh, LOCAL_NODE as NODE } from "../support/localMesh.ts";
import { meshClient } from "../../src/client/client.ts";
import { busWatch, meshReader } from "../../src/cli/ui.ts";
import { startUi, type UiServer } from "../../src/ui/server.ts";
import { runMesh } from "../support/cli.ts";
import { EXIT_OK } from "../../src/cli/context.ts";

const CHROMIUM = "/usr/bin/chromium";
const SKIP = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) to run the browser test`;

describe("mesh ui over a mesh made by mesh up: the greeter runs through its agent (issue 30)", { skip: SKIP }, () => {
  let ui: UiServer;
  let browser: Browser;
  after(async () => {
    await browser?.close();
    await ui?.stop();
  });
  const local = localMesh({ prefix: "mesh-ui-up-", upTimeoutMs: 60_000, manifests: [join(EXAMPLES_DIR, "broker.json"), join(EXAMPLES_DIR, "greeter.json")] });
  const { logs } = local;

  before(async () => {
    const { operator: nc, result } = local;
    const secrets = [String((JSON.parse(readFileSync(result.paths.operatorCredential, "utf8")) as { seed?: string }).seed ?? "")];
    ui = await startUi({ reader: meshReader(meshClient(nc, operatorUser(result.paths), { timeoutMs: 10_000 })), host: "127.0.0.1", port: 0, secrets, watch: (changed) => busWatch(nc, changed, () => undefined) });
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  });

  it("R72: the page shows greeter running on alpha as its agent reported it; an assign by the CLI shows within 1 s", async (t) => {
    const page = await browser.newPage({ viewport: { width: 1200, height: 640 } });
    await page.goto(ui.url);
    await page.locator(`[data-run="${NODE}/greeter"]`, { hasText: "running" }).waitFor({ timeout: 30_000 }).catch((error: unknown) => {
      throw new Error(`greeter not shown running: ${String(error)}\n${logs.slice(-30).join("\n")}`);
    });
    // `mesh up` assigns what it registers: a module registered now is on no node until assigned.
    const cli = (...argv: string[]) => runMesh(argv, { MESH_CREDENTIAL: local.result.paths.operatorCredential });
    const registered = await cli("module", "register", join(EXAMPLES_DIR, "builder.json"));
    assert.equal(registered.code, EXIT_OK, registered.err);
    await page.locator('[data-nodes="builder"]', { hasText: "-" }).waitFor({ timeout: 1_000 });
    const assigned = await cli("assign", "builder", NODE);
    assert.equal(assigned.code, EXIT_OK, assigned.err);
    const done = Date.now();
    await page.locator('[data-nodes="builder"]', { hasText: NODE }).waitFor({ timeout: 1_000 });
    t.diagnostic(`the assign showed ${Date.now() - done} ms after the CLI returned`);
    const shot = join(local.root, "ui.png");
    await page.screenshot({ path: shot, fullPage: true });
    // The test artifact stays in test-artifacts/ (gitignored); the docs' picture is renewed on request only.
    copyFileSync(shot, join(artifactsDir(), "ui.png"));
    if (process.env.MESH_UPDATE_SCREENSHOTS === "1") copyFileSync(shot, join(import.meta.dirname, "../../docs/ui.png"));
  });
});
