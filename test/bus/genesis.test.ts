import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { X509Certificate } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { genesis, meshPaths, type GenesisResult } from "../../installer/genesis.ts";
import { readEnvFile } from "../../installer/controllerEnv.ts";
import { freePort } from "../../installer/serverConfig.ts";
import { carriedControllerPermissions, readUserList } from "../../installer/carried.ts";
import { BOOTSTRAP_SEED, BOOTSTRAP_USER } from "../../src/genesis.ts";
import { InstallerError } from "../../installer/tls.ts";
import { startBus } from "../../installer/bus.ts";
import { connectToBus, CertificateMismatch } from "../../src/bus/connect.ts";
import { replay } from "../../src/records/catalogue.ts";
import { parseControllerConfig, ConfigError } from "../../src/config.ts";
import { controllerReplyInboxes, permissionsOf } from "../../src/compose/permissions.ts";
import { secretMatches, openWithMeshKey } from "../../src/crypto/secrets.ts";
import { CONTROLLER_NAME, inboxSubjects } from "../../src/names.ts";
import { exampleMesh } from "../unit/compose/exampleMesh.ts";
import { initHostKeys, readCredentialFile, saveNodeCredential, NODE_CREDENTIAL_FILE } from "../../src/host/index.ts";
import { busUser } from "../../src/names.ts";
import { credentialAt, nodeOf } from "../../src/projections/index.ts";
import { bindMountOnItself, mountSkip, unmount } from "../support/mounts.ts";

const quiet = (lines: string[]) => (line: string) => { lines.push(line); };

describe("genesis", () => {
  let root: string;
  let made: GenesisResult;
  let port: number;
  const logs: string[] = [];
  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-genesis-"));
    port = await freePort();
    made = await genesis({ dir: join(root, ".mesh"), brokerAddress: `tls://127.0.0.1:${port}`, log: quiet(logs), monitorPort: 0 });
  });
  after(async () => {
    await made?.bus?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("R13: the bus accepts the controller at the bootstrap password, and the records hold the genesis commit", async () => {
    const nc = await connectToBus(
      { address: made.mesh.genesisAddress, user: BOOTSTRAP_USER, seed: BOOTSTRAP_SEED, fingerprint: made.mesh.fingerprint },
      { reconnect: false },
    );
    try {
      const state = await replay(nc);
      assert.equal(state.mesh?.genesisAddress, `tls://127.0.0.1:${port}`);
      assert.equal(state.mesh?.fingerprint, made.mesh.fingerprint);
      assert.equal(state.mesh?.bootstrapUser, BOOTSTRAP_USER);
      const operator = credentialAt(state.credentials, "operator:admin");
      assert.ok(operator, "the first operator's credential is recorded");
      const file = JSON.parse(readFileSync(made.paths.operatorCredential, "utf8")) as { seed: string; user: string };
      assert.equal(file.user, operator.user);
      assert.ok(secretMatches(file.seed, operator), "the records hold the public key of the operator's seed (R63)");
      const meshKey = readFileSync(made.paths.meshKey, "utf8").trim();
      assert.equal(openWithMeshKey(meshKey, operator.sealed!), file.seed, "the secret is sealed with the mesh key");
      assert.ok(!JSON.stringify(state).includes(file.seed), "the password itself is not in the records");
    } finally {
      await nc.close();
    }
  });

  it("R13: the first operator dials the bus with the credential file the CLI finds, readable by its owner alone", async () => {
    for (const file of [made.paths.operatorCredential, made.paths.controllerCredential, made.paths.meshKey, made.paths.tlsKey, made.paths.controllerEnv]) {
      assert.equal(statSync(file).mode & 0o777, 0o600, `${file} is 0600`);
    }
    const credential = JSON.parse(readFileSync(made.paths.operatorCredential, "utf8")) as Parameters<typeof connectToBus>[0];
    const nc = await connectToBus(credential, { reconnect: false });
    await nc.close();
  });

  it("R15 R33: the carried user list grants the controller the template and its replies to the genesis operator, as composition derives them", async () => {
    const listed = readUserList(readFileSync(made.paths.userList, "utf8"));
    const controller = listed.find((u) => u.user === BOOTSTRAP_USER);
    assert.ok(controller, "the carried list has the controller's account");
    assert.ok(secretMatches(BOOTSTRAP_SEED, { nkey: controller.nkey }), "at the genesis key (R13, R63)");
    const nc = await connectToBus(
      { address: made.mesh.genesisAddress, user: BOOTSTRAP_USER, seed: BOOTSTRAP_SEED, fingerprint: made.mesh.fingerprint },
      { reconnect: false },
    );
    const genesisState = await replay(nc).finally(() => nc.close());
    assert.deepEqual(controller.permissions, carriedControllerPermissions(genesisState));
    // the reply grants: exactly the genesis operator's inbox, built by composition's own function
    const replies = controller.permissions.publish.allow.filter((s) => s.startsWith("_INBOX"));
    assert.deepEqual(replies, [inboxSubjects("operator-admin")]);
    const config = parseControllerConfig(readEnvFile(made.paths.controllerEnv));
    const atGenesis = permissionsOf(genesisState, { kind: "controller", name: CONTROLLER_NAME }, { controllerSubmits: config.controllerSubmits });
    assert.deepEqual(atGenesis.publish.allow.filter((s) => s.startsWith("_INBOX")), replies);
    // the static part equals what composition derives for the example mesh (its seats registered), minus its operators' inboxes
    const example = exampleMesh().state;
    const derived = permissionsOf(example, { kind: "controller", name: CONTROLLER_NAME }, { controllerSubmits: config.controllerSubmits });
    const without = (subjects: string[], inboxes: string[]) => subjects.filter((s) => !inboxes.includes(s));
    assert.deepEqual(
      without(controller.permissions.publish.allow, replies), without(derived.publish.allow, controllerReplyInboxes(example)),
      "publish: the installer's real output equals what composition derives (R15)",
    );
    assert.deepEqual(controller.permissions.subscribe, derived.subscribe, "subscribe: the installer's real output equals what composition derives (R15)");
    assert.equal(controller.permissions.allow_responses, derived.allow_responses);
    assert.deepEqual(listed.map((u) => u.user).sort(), [BOOTSTRAP_USER, "operator-admin"]);
  });

  it("R34 R71: the certificate names the genesis host and localhost; a client without the mesh CA is refused, a wrong pin too", async () => {
    const certificate = new X509Certificate(readFileSync(made.paths.tlsCert));
    assert.match(certificate.subjectAltName ?? "", /DNS:localhost/);
    assert.match(certificate.subjectAltName ?? "", /IP Address:127\.0\.0\.1/);
    await assert.rejects(connect({ servers: `127.0.0.1:${port}`, tls: {}, reconnect: false, timeout: 3_000 }));
    const wrong = Array.from({ length: 32 }, () => "AB").join(":");
    await assert.rejects(
      connectToBus({ address: made.mesh.genesisAddress, user: "x", password: "y", fingerprint: wrong }, { reconnect: false }),
      (error: unknown) => error instanceof CertificateMismatch,
    );
  });

  it("R35: the installer's controller configuration is consistent; a contradicting fingerprint is refused naming both variables", () => {
    const env = readEnvFile(made.paths.controllerEnv);
    const config = parseControllerConfig(env);
    assert.equal(config.fingerprint, made.mesh.fingerprint);
    assert.equal(config.brokerAddress, made.mesh.genesisAddress);
    assert.equal(config.credential.address, made.mesh.genesisAddress);
    const wrong = Array.from({ length: 32 }, () => "CD").join(":");
    assert.throws(() => parseControllerConfig({ ...env, MESH_BROKER_FINGERPRINT: wrong }), (error: unknown) =>
      error instanceof ConfigError && error.variables.includes("MESH_BROKER_FINGERPRINT") && error.variables.includes("MESH_BROKER_CERTIFICATE"));
    assert.throws(() => parseControllerConfig({ ...env, MESH_BUS_URL: `tls://127.0.0.1:${port + 1}` }), (error: unknown) =>
      error instanceof ConfigError && error.variables.includes("MESH_BUS_URL") && error.variables.includes("MESH_BROKER_ADDRESS"));
  });

  it("R35: a missing certificate file and an unreadable mesh key are refused at start with one line each", () => {
    const env = readEnvFile(made.paths.controllerEnv);
    for (const [variable, value] of [["MESH_BROKER_CERTIFICATE", join(root, "missing.pem")], ["MESH_KEY_FILE", root]] as const) {
      assert.throws(() => parseControllerConfig({ ...env, [variable]: value }), (error: unknown) =>
        error instanceof ConfigError && error.variables.includes(variable) && error.message.split("\n").length === 1);
    }
  });

  it("R13: genesis refuses to run over an existing mesh unless forced, and leaves it untouched", async () => {
    const before = readFileSync(made.paths.meshFile, "utf8");
    await assert.rejects(
      genesis({ dir: made.paths.dir, brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: quiet(logs) }),
      (error: unknown) => error instanceof InstallerError && error.message.split("\n").length === 1,
    );
    assert.equal(readFileSync(made.paths.meshFile, "utf8"), before);
  });

  it("R3: no progress line of genesis carries a password", () => {
    const operator = (JSON.parse(readFileSync(made.paths.operatorCredential, "utf8")) as { seed: string }).seed;
    assert.ok(logs.length > 0);
    for (const line of logs) {
      assert.ok(!line.includes(operator) && !line.includes(BOOTSTRAP_SEED), `a log line carries a password: ${line}`);
    }
  });
});

describe("genesis: bad configuration fails with one clear line and writes nothing", () => {
  let root: string;
  let blocker: Server;
  let busyPort: number;
  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-genesis-bad-"));
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen({ host: "127.0.0.1", port: 0 }, () => resolve()));
    busyPort = (blocker.address() as { port: number }).port;
  });
  after(async () => {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
    rmSync(root, { recursive: true, force: true });
  });

  const oneLine = (error: unknown) => error instanceof InstallerError && error.message.split("\n").length === 1;
  const nothingWritten = (name: string) => {
    assert.ok(!existsSync(join(root, name)), `${name} was not created`);
    assert.deepEqual(readdirSync(root).filter((f) => f.includes("genesis")), [], "no temporary folder is left");
  };

  it("R35: a port in use", async () => {
    await assert.rejects(genesis({ dir: join(root, "busy"), brokerAddress: `tls://127.0.0.1:${busyPort}`, log: () => {} }), (error: unknown) =>
      oneLine(error) && /in use/.test((error as Error).message));
    nothingWritten("busy");
  });

  it("R35: nats-server missing says how to install it", async () => {
    await assert.rejects(
      genesis({ dir: join(root, "nobin"), brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, searchPath: "/nonexistent" }),
      (error: unknown) => oneLine(error) && /apt-get install -y nats-server/.test((error as Error).message),
    );
    nothingWritten("nobin");
  });

  it("R8: a plain nats:// genesis address is refused (the bus always presents the mesh certificate)", async () => {
    await assert.rejects(genesis({ dir: join(root, "plain"), brokerAddress: `nats://127.0.0.1:${await freePort()}`, log: () => {} }), oneLine);
    nothingWritten("plain");
  });

  it("R35: a folder with other files in it is refused", async () => {
    mkdirSync(join(root, "full"));
    writeFileSync(join(root, "full", "keep.txt"), "mine");
    await assert.rejects(genesis({ dir: join(root, "full"), brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {} }), oneLine);
    assert.deepEqual(readdirSync(join(root, "full")), ["keep.txt"]);
  });

  it("R34: a bus whose certificate file is gone fails at start with one line", async () => {
    const port = await freePort();
    const made = await genesis({ dir: join(root, "nocert"), brokerAddress: `tls://127.0.0.1:${port}`, log: () => {}, monitorPort: 0 });
    await made.bus?.stop();
    const paths = meshPaths(join(root, "nocert"));
    rmSync(paths.tlsCert);
    await assert.rejects(
      startBus({ binary: "nats-server", configFile: paths.serverConfig, logFile: join(paths.logs, "bus.log"), host: "127.0.0.1", port, fingerprint: made.mesh.fingerprint, detached: false }),
      oneLine,
    );
  });
});

describe("genesis with its node (R56)", () => {
  let root: string;
  let made: GenesisResult;
  let hostDir: string;
  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-genesis-node-"));
    hostDir = join(root, "host");
    initHostKeys(hostDir);
    made = await genesis({
      dir: join(root, ".mesh"), brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, monitorPort: 0,
      node: { name: "bushost", stateDir: hostDir },
    });
  });
  after(async () => {
    await made?.bus?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("R56: `--node` enrols the genesis node in the records and its agent's credential, opened from the enrol reply, is admitted before any push", async () => {
    assert.ok(made.enrolReply && existsSync(made.enrolReply));
    saveNodeCredential(hostDir, JSON.parse(readFileSync(made.enrolReply, "utf8")));
    const credential = readCredentialFile(join(hostDir, NODE_CREDENTIAL_FILE), hostDir);
    assert.equal(credential.user, busUser("node", "bushost"));
    assert.equal(credential.address, made.mesh.genesisAddress, "off the overlay at genesis, the node dials the genesis address (R7)");
    const nc = await connectToBus(credential, { reconnect: false });
    try {
      // The agent's own consumer lookup is what it does first: granted by the carried permissions (R2).
      assert.ok(readUserList(readFileSync(made.paths.userList, "utf8")).some((u) => u.user === credential.user));
    } finally {
      await nc.close();
    }
    const controller = await connectToBus(
      { address: made.mesh.genesisAddress, user: BOOTSTRAP_USER, seed: BOOTSTRAP_SEED, fingerprint: made.mesh.fingerprint },
      { reconnect: false },
    );
    try {
      const state = await replay(controller);
      assert.ok(nodeOf(state.nodes, "bushost"), "the records hold the genesis node");
      assert.ok(credentialAt(state.credentials, "node:bushost"), "and its credential");
      // R64: the node's key was generated in its folder: the records hold its public key, no secret.
      assert.equal(credentialAt(state.credentials, "node:bushost")!.nkey, readFileSync(join(hostDir, "node.nkey"), "utf8").trim());
      assert.equal(credentialAt(state.credentials, "node:bushost")!.sealed, undefined);
      assert.ok(!JSON.stringify(state).includes(readFileSync(join(hostDir, "node.seed"), "utf8").trim()), "the node's seed is nowhere in the records");
    } finally {
      await controller.close();
    }
  });

  it("R56: a genesis node without a key in its state folder is refused naming --node-state, and nothing is written", async () => {
    await assert.rejects(
      genesis({ dir: join(root, "nokey"), brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, node: { name: "bushost", stateDir: join(root, "empty") } }),
      (error: unknown) => error instanceof InstallerError && /--node-state/.test(error.message),
    );
    assert.ok(!existsSync(join(root, "nokey")));
  });

  it("R56: `--systemd` writes units for the bus, the controller (its settings from controller.env) and the genesis node's host agent (with the bus's settings)", async () => {
    const keys = join(root, "sd-host");
    initHostKeys(keys);
    const sd = await genesis({
      dir: join(root, "sd"), brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, monitorPort: 0, systemd: true,
      node: { name: "bushost", stateDir: keys },
    });
    const unit = (name: string) => readFileSync(join(sd.paths.dir, name), "utf8");
    assert.deepEqual(sd.unitFiles?.map((f) => f.slice(sd.paths.dir.length + 1)), ["mesh-bus.service", "mesh-controller.service", "mesh-host.service"]);
    assert.match(unit("mesh-controller.service"), new RegExp(`EnvironmentFile=${sd.paths.controllerEnv}`));
    assert.match(unit("mesh-controller.service"), /ExecStart=\S+ \S+bin\/mesh\.js controller/);
    assert.match(unit("mesh-host.service"), new RegExp(`ExecStart=\\S+ \\S+bin/mesh\\.js host --state ${keys} --node bushost --bus-include ${sd.paths.userList}`));
  });
});

describe("genesis on a folder that is a mount point (issue 26)", { skip: mountSkip }, () => {
  let root: string;
  const mounted: string[] = [];
  const made: GenesisResult[] = [];
  const onMount = (name: string) => {
    const dir = join(root, name);
    bindMountOnItself(dir);
    mounted.push(dir);
    return dir;
  };
  before(() => {
    root = mkdtempSync(join(tmpdir(), "mesh-genesis-mount-"));
  });
  after(async () => {
    for (const one of made) await one.bus?.stop();
    for (const dir of mounted) unmount(dir);
    rmSync(root, { recursive: true, force: true });
  });

  it("R54: genesis makes its mesh in a mount point (its temporary files beside their targets, never renamed across devices, the folder itself never renamed)", async () => {
    const dir = onMount("volume");
    made.push(await genesis({ dir, brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, monitorPort: 0 }));
    assert.ok(existsSync(join(dir, "mesh.json")) && existsSync(join(dir, "operator.json")));
    assert.ok(!readdirSync(root).some((f) => f.includes("genesis")), "nothing was made beside the mount point");
    assert.deepEqual(readdirSync(dir).filter((f) => f.startsWith(".")), [], "no temporary folder is left inside it");
  });

  it("R56: genesis with its node keeps the node's folder inside the mount point, as `mesh up --dir <a volume>` makes it", async () => {
    const dir = onMount("volume-node");
    const hostDir = join(dir, "host");
    initHostKeys(hostDir);
    made.push(await genesis({ dir, brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, monitorPort: 0, node: { name: "bushost", stateDir: hostDir } }));
    assert.ok(existsSync(join(hostDir, "node.seed")), "the node's keys are kept");
    assert.ok(existsSync(join(dir, "bushost.enrol.json")));
  });

  it("R13: a forced genesis over a mesh in a mount point replaces it there", async () => {
    const dir = onMount("volume-forced");
    const first = await genesis({ dir, brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, monitorPort: 0 });
    await first.bus?.stop();
    const again = await genesis({ dir, brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, monitorPort: 0, force: true });
    made.push(again);
    assert.notEqual(again.mesh.fingerprint, first.mesh.fingerprint, "a new mesh");
    assert.ok(!readdirSync(root).some((f) => f.includes("genesis")), "nothing was made beside the mount point");
  });

  it("R35: a mount point holding only lost+found (a new ext4 volume) counts as empty", async () => {
    const dir = onMount("ext4-like");
    mkdirSync(join(dir, "lost+found"));
    made.push(await genesis({ dir, brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, monitorPort: 0 }));
    assert.ok(existsSync(join(dir, "lost+found")) && existsSync(join(dir, "mesh.json")));
  });
});
