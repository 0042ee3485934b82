import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, nkeyAuthenticator } from "@nats-io/transport-node";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { newUserKey } from "../../src/crypto/secrets.ts";
import { renderUserList, type BusUser } from "../../src/compose/index.ts";
import { configLoadTime, installUserList, lastGoodFile, UserListRefused, type BusReloadOptions } from "../../src/host/index.ts";

/**
 * The broker holder's install of the user list (host/busList.ts) against a real nats-server 2.9.10:
 * the bus is signalled without `nats-server -t` in front, so a list it cannot take reaches it; these
 * pin that the bus then keeps running its list (its reload fails as a whole: `config_load_time`
 * does not move) and that the install puts the last good file back and says so (R11, R54).
 */

const all = { publish: { allow: [">"] }, subscribe: { allow: [">"] } };
type Key = { seed: string; publicKey: string };
function user(name: string, key: Key): BusUser {
  return { user: name, nkey: key.publicKey, permissions: all, principal: { kind: "operator", name } };
}
const fresh = (): Key => newUserKey();

describe("R11 R54: installing the user list on a real bus", () => {
  let server: NatsServer;
  let dir: string;
  let includeFile: string;
  let target: BusReloadOptions;
  const admin = fresh();

  /** Whether the bus admits `key` now (one dial, no reconnect). */
  async function admits(key: Key): Promise<boolean> {
    try {
      const nc = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(key.seed)), reconnect: false, maxReconnectAttempts: 0 });
      await nc.close();
      return true;
    } catch {
      return false;
    }
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "mesh-bus-list-"));
    includeFile = join(dir, "users.conf");
    server = await startNatsServer({
      dir,
      files: { "users.conf": renderUserList({ users: [user("admin", admin)] }) },
      config: [`include "users.conf"`, `pid_file: "${join(dir, "server.pid")}"`].join("\n"),
    });
    target = { includeFile, configFile: server.configFile, pid: join(dir, "server.pid"), monitorUrl: `http://127.0.0.1:${server.monitorPort}`, reloadTimeoutMs: 10_000 };
  });
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("R11: a list installed is live when the install returns; the last good file is the same file under a second name (R54: nothing copied)", async () => {
    const newcomer = fresh();
    const text = renderUserList({ users: [user("admin", admin), user("newcomer", newcomer)] });
    const done = await installUserList(text, target);
    assert.equal(done.changed, true);
    assert.equal(await admits(newcomer), true, "the new user is admitted as soon as the install returns");
    assert.equal(readFileSync(includeFile, "utf8"), text);
    assert.equal(statSync(lastGoodFile(includeFile)).ino, statSync(includeFile).ino);
    assert.deepEqual(await installUserList(text, target), { changed: false }, "the same list again: nothing to do, no reload");
  });

  it("R11: a list the bus cannot parse is refused `invalid`; the bus keeps running its list and the last good file is back in place, byte for byte", async () => {
    const kept = fresh();
    const good = renderUserList({ users: [user("admin", admin), user("kept", kept)] });
    await installUserList(good, target);
    const loadedBefore = await configLoadTime(target.monitorUrl);
    const lastGoodBefore = readFileSync(lastGoodFile(includeFile), "utf8");
    await assert.rejects(installUserList(`${good}authorization { users = [ {nkey: `, target), (error: unknown) => error instanceof UserListRefused && error.code === "invalid");
    assert.equal(readFileSync(includeFile, "utf8"), good, "the include file is the last good one again");
    assert.equal(readFileSync(lastGoodFile(includeFile), "utf8"), lastGoodBefore, "and the last good file is unchanged");
    assert.equal(await admits(kept), true, "the bus still admits the users of its running list");
    // The bus was signalled with the broken file: its reload failed as a whole and changed nothing.
    assert.equal(await configLoadTime(target.monitorUrl), loadedBefore);
  });

  it("R11: without `nats-server -t` to ask, a list the bus refuses shows as config_load_time standing still: `reload-failed` at the bound, the last good file back", async () => {
    const kept = fresh();
    const good = renderUserList({ users: [user("admin", admin), user("kept-too", kept)] });
    await installUserList(good, target);
    const loadedBefore = await configLoadTime(target.monitorUrl);
    const broken = { ...target, natsServer: join(dir, "no-such-nats-server"), reloadTimeoutMs: 1_500 };
    await assert.rejects(installUserList(`${good}authorization { users = [ {nkey: `, broken), (error: unknown) => error instanceof UserListRefused && error.code === "reload-failed");
    assert.equal(readFileSync(includeFile, "utf8"), good);
    assert.equal(await admits(kept), true);
    assert.equal(await configLoadTime(target.monitorUrl), loadedBefore);
    assert.match(server.log(), /Failed to reload server configuration/, "the bus's log says why");
  });

  it("R11: a valid list is installed even when `nats-server -t` cannot run: the bus's own reload is the judge", async () => {
    const late = fresh();
    const text = renderUserList({ users: [user("admin", admin), user("late", late)] });
    const done = await installUserList(text, { ...target, natsServer: join(dir, "no-such-nats-server") });
    assert.equal(done.changed, true);
    assert.equal(await admits(late), true);
  });
});
