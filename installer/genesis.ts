import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { z } from "zod";
import { connectToBus } from "../src/bus/connect.ts";
import { openCatalogue } from "../src/records/catalogue.ts";
import { renderUserList } from "../src/compose/userList.ts";
import { busCertificateNames, certificateNames, evolve, initialState, formatBusAddress, parseBusAddress } from "../src/projections/index.ts";
import { isNodePublicKey, newFreshSecret, newMeshKey, openWithMeshKey, sealToNode, sealWithMeshKey } from "../src/crypto/secrets.ts";
import { nodeEnrol } from "../src/commands/nodeEnrol.ts";
import { nameProblem } from "../src/names.ts";
import type { Commit } from "../src/events/index.ts";
import { CA_CERT_FILE, CA_KEY_FILE, InstallerError, makeBusCertificate, TLS_CERT_FILE, TLS_KEY_FILE } from "./tls.ts";
import { readBusCredential, writeBusCredential, writeFileDurable } from "../src/files/index.ts";
import {
  assertPortFree, busLogFile, clusterServerConfigs, clusterServerDir, findNatsServer, freePort, renderServerConfig, testServerConfig,
  SERVER_CONFIG_FILE, STORE_DIR, USER_LIST_FILE,
} from "./serverConfig.ts";
import { CARRIED_CONTROLLER_SUBMITS, carriedUsers } from "./carried.ts";
import { BOOTSTRAP_SEED, BOOTSTRAP_USER } from "../src/genesis.ts";
import { decideGenesis, GENESIS_COMMAND_ID } from "../src/commands/genesis.ts";
import { pidFile, startBus, stopPid, systemdUnit, controllerUnit, hostUnit, isAlive, type BusProcess } from "./bus.ts";
import { clearMeshFolder, commitStaging, makeStaging, meshFolderEntries, undoGenesis } from "./staging.ts";
import { CONTROLLER_ENV_FILE } from "./controllerEnv.ts";

/**
 * Genesis of a new mesh (DESIGN.md: installer, R8, R13, R14, R15, R34). Everything is written into
 * a staging folder inside `dir` and moved into place at the end, mesh.json last (installer/staging.ts:
 * `dir` may be a mount point); a failure after that (the bus would not start, the genesis commit
 * could not be recorded) stops the bus and removes what genesis made again: nothing is left
 * half-written.
 *
 * The mesh folder:
 *   mesh.json         the genesis facts (no secret): address, fingerprint, ports, operator
 *   mesh.key          the mesh key (0600)
 *   mesh-ca.pem       the mesh's certificate authority (R71); mesh-ca-key.pem its key (0600)
 *   bus-key.pem       the bus's TLS key (0600); bus-cert.pem its certificate, issued by the CA, then the CA's
 *   bus.conf          nats-server configuration; users.conf its user list (include file)
 *   store/            the JetStream store
 *   controller.env    the controller's configuration (MESH_* variables, 0600)
 *   controller.json   the controller's credential, at the genesis seed until rotated (0600)
 *   operator.json     the first operator's credential (0600): `mesh` finds it at ./.mesh/operator.json
 *   <node>.enrol.json the genesis node's enrol reply (with `node`, R56): address, user and public
 *                     key, no secret: `mesh host credential --from` joins it with the node's seed
 *   mesh-*.service    with `systemd`: units for the bus, the controller and the genesis node's host
 *   logs/, run/       process logs and pid files of `mesh up`
 *
 * With `cluster` (issue 14, R60..R62) the bus is N servers on this machine: `bus-<n>/` holds each
 * one's bus.conf, its own copy of the user list (users.conf: each server reads only its own), its
 * store and its pid file; mesh.json lists them (`servers`); there is no top-level bus.conf,
 * users.conf or store.
 */

export const MESH_FILE = "mesh.json";
export const MESH_KEY_FILE = "mesh.key";
export const CONTROLLER_CREDENTIAL_FILE = "controller.json";
export const OPERATOR_CREDENTIAL_FILE = "operator.json";
export const BUS_UNIT_FILE = "mesh-bus.service";
export const CONTROLLER_UNIT_FILE = "mesh-controller.service";
export const HOST_UNIT_FILE = "mesh-host.service";

/** The file genesis writes the genesis node's enrol reply to (R56): `<dir>/<node>.enrol.json`. */
export function enrolReplyFile(dir: string, node: string): string {
  return join(resolve(dir), `${node}.enrol.json`);
}

/** The command id of the genesis node's enrolment, recorded at genesis (R56). */
export function genesisNodeCommandId(node: string): string {
  return `${GENESIS_COMMAND_ID}-node-${node}`;
}

/** The genesis facts kept in mesh.json (no secret in it). */
export const MeshFile = z
  .object({
    genesisAddress: z.string(),
    fingerprint: z.string(),
    operator: z.string(),
    listenHost: z.string(),
    port: z.number().int(),
    monitorPort: z.number().int(),
    createdAt: z.string(),
    /** A cluster's servers (issue 14), in order; the first is the genesis address's. Absent on one server. */
    servers: z.array(z.object({
      name: z.string(),
      port: z.number().int(),
      routePort: z.number().int(),
      monitorPort: z.number().int(),
    }).strict()).optional(),
  })
  .strict();
export type MeshFile = z.infer<typeof MeshFile>;

/** One server of the mesh's bus as `mesh up`, `down`, `status` and the broker's host see it. */
export type BusServer = {
  /** `mesh-bus` on one server; `mesh-bus-<n>` on a cluster (its server_name). */
  name: string;
  /** The pid file `mesh up` records it under: `<dir>/run/<process>.pid` (`bus`, or `bus-<n>`). */
  process: string;
  /** Its client address, `tls://<local host>:<port>`. */
  address: string;
  port: number;
  configFile: string;
  userList: string;
  /** The pid file nats-server itself writes (the host agent signals it to reload). */
  serverPidFile: string;
  monitorUrl: string;
  logFile: string;
};

/**
 * Every server of the bus of the mesh in `paths` (one, or a cluster's, in order). Pure apart from
 * nothing: `mesh` is mesh.json as read.
 */
export function busServers(paths: MeshPaths, mesh: MeshFile): BusServer[] {
  const host = localHost(mesh.listenHost);
  if (!mesh.servers) {
    return [{
      name: "mesh-bus", process: "bus", address: `tls://${host}:${mesh.port}`, port: mesh.port,
      configFile: paths.serverConfig, userList: paths.userList, serverPidFile: pidFile(paths.dir, "bus"),
      monitorUrl: `http://127.0.0.1:${mesh.monitorPort}`, logFile: busLogFile(paths.dir),
    }];
  }
  return mesh.servers.map((server, i) => {
    const folder = join(paths.dir, clusterServerDir(i));
    return {
      name: server.name, process: clusterServerDir(i), address: `tls://${host}:${server.port}`, port: server.port,
      configFile: join(folder, SERVER_CONFIG_FILE), userList: join(folder, USER_LIST_FILE), serverPidFile: join(folder, "bus.pid"),
      monitorUrl: `http://127.0.0.1:${server.monitorPort}`, logFile: busLogFile(paths.dir, i),
    };
  });
}

/** Every path of a mesh folder, absolute. */
export type MeshPaths = {
  dir: string;
  meshFile: string;
  meshKey: string;
  tlsKey: string;
  tlsCert: string;
  caCert: string;
  caKey: string;
  serverConfig: string;
  userList: string;
  store: string;
  controllerEnv: string;
  controllerCredential: string;
  operatorCredential: string;
  logs: string;
  run: string;
};

/** The paths of the mesh folder `dir` (made absolute). Pure apart from resolving `dir`. */
export function meshPaths(dir: string): MeshPaths {
  const root = resolve(dir);
  return {
    dir: root,
    meshFile: join(root, MESH_FILE),
    meshKey: join(root, MESH_KEY_FILE),
    tlsKey: join(root, TLS_KEY_FILE),
    tlsCert: join(root, TLS_CERT_FILE),
    caCert: join(root, CA_CERT_FILE),
    caKey: join(root, CA_KEY_FILE),
    serverConfig: join(root, SERVER_CONFIG_FILE),
    userList: join(root, USER_LIST_FILE),
    store: join(root, STORE_DIR),
    controllerEnv: join(root, CONTROLLER_ENV_FILE),
    controllerCredential: join(root, CONTROLLER_CREDENTIAL_FILE),
    operatorCredential: join(root, OPERATOR_CREDENTIAL_FILE),
    logs: join(root, "logs"),
    run: join(root, "run"),
  };
}

/** True when `dir` holds a mesh (its mesh.json). */
export function hasMesh(dir: string): boolean {
  return existsSync(meshPaths(dir).meshFile);
}

/** Reads mesh.json of `dir`; throws InstallerError (one line) when there is no mesh there. */
export function readMeshFile(dir: string): MeshFile {
  const paths = meshPaths(dir);
  if (!existsSync(paths.meshFile)) throw new InstallerError(`no mesh in ${paths.dir}: run \`mesh up\` (or genesis) there first`);
  return MeshFile.parse(JSON.parse(readFileSync(paths.meshFile, "utf8")));
}

/** The controller's configuration as environment lines, the MESH_* variables parseControllerConfig reads. */
export function controllerEnvironment(paths: MeshPaths, genesisAddress: string, replicas = 1): Record<string, string> {
  return {
    MESH_BROKER_ADDRESS: genesisAddress,
    // The CA, not the bus's certificate: its fingerprint is the pin, and it outlives every reissue (R71).
    MESH_BROKER_CERTIFICATE: paths.caCert,
    MESH_KEY_FILE: paths.meshKey,
    MESH_CONTROLLER_CREDENTIAL: paths.controllerCredential,
    MESH_CONTROLLER_SUBMITS: CARRIED_CONTROLLER_SUBMITS.join(","),
    // A cluster: every stream, store and the lease bucket with a copy on each server (R61, R62).
    ...(replicas > 1 ? { MESH_CATALOGUE_REPLICAS: String(replicas) } : {}),
  };
}

export type GenesisOptions = {
  /** The mesh folder to create (`.mesh` for the embedded default). */
  dir: string;
  /** MESH_BROKER_ADDRESS: the broker's public endpoint, `tls://host[:port]` or `host[:port]` (R8: 4222 when absent). */
  brokerAddress: string;
  /** What the person typed to give `brokerAddress`, named in its errors (default MESH_BROKER_ADDRESS; the CLI passes "--address"). */
  addressSource?: string;
  /** Replace an existing mesh in `dir` (its bus is stopped and its folder removed). */
  force?: boolean;
  /** Progress lines; never given a password (R3). */
  log: (line: string) => void;
  /** The first operator's name (default "admin"). */
  operator?: string;
  /** Interface the bus listens on (default: the genesis host when it is 127.0.0.1/localhost, else 0.0.0.0). */
  listenHost?: string;
  /** Monitoring port on 127.0.0.1 (default: client port + 4000 capped to 65535; 0 for none). */
  monitorPort?: number;
  /** Overlay names the certificate should also carry (R34 field note). */
  extraNames?: readonly string[];
  /**
   * The genesis node (R56): the machine's host agent, enrolled in the genesis records and carried
   * in the first user list beside the controller, so the broker's holder can dial the bus before
   * any list was composed. `stateDir` is its state folder, where `mesh host init` put `node.pub`;
   * it may be a sub-folder of `dir` (it is kept). Genesis writes the enrol reply to
   * enrolReplyFile(dir, name) for `mesh host credential --from`.
   */
  node?: { name: string; stateDir: string };
  /** Leave the bus stopped and write systemd units for the bus, the controller and the genesis node's host (`--systemd`). */
  systemd?: boolean;
  /** Leave the bus running detached from this process (default true); a test owning it passes false. */
  detachBus?: boolean;
  /** Where to look for nats-server (a PATH-like list); default the inherited PATH. */
  searchPath?: string;
  /** Time for the genesis commit (ISO 8601); default now. */
  now?: string;
  /**
   * A cluster of this many servers on this machine (issue 14; 3, or at least 2): server 1 listens
   * on the genesis address's port, the others on free ports the OS picks; routes between them over
   * TLS with the mesh certificate; every stream with this many replicas. Not with `systemd`.
   */
  cluster?: number;
  /**
   * Makes the bus's TLS identity in a folder for names (default makeBusCertificate: the mesh CA
   * and a certificate issued by it, R71). A test of a mesh made before R71 passes the self-signed
   * certificate such a mesh had.
   */
  makeCertificate?: (dir: string, names: readonly string[]) => Promise<{ fingerprint: string }>;
};

export type GenesisResult = {
  paths: MeshPaths;
  mesh: MeshFile;
  /** The running bus (the embedded default; a cluster's first server); undefined with `systemd`. */
  bus?: BusProcess;
  /** Every running server of the bus, in order (one, or a cluster's). */
  buses?: BusProcess[];
  /** The bus's systemd unit text, with `systemd`. */
  unit?: string;
  /** Every unit file written, with `systemd` (bus, controller, and the genesis node's host). */
  unitFiles?: string[];
  /** The genesis node's enrol reply file, with `node`. */
  enrolReply?: string;
};

function rejectUnlessEmptyOrForced(paths: MeshPaths, force: boolean, keep: string | null): void {
  if (!existsSync(paths.dir)) return;
  if (existsSync(paths.meshFile)) {
    if (!force) throw new InstallerError(`${paths.dir} already holds a mesh: use it (\`mesh up\`), or pass --force to replace it and lose its records`);
    return;
  }
  if (meshFolderEntries(paths.dir, keep).length > 0 && !force) {
    throw new InstallerError(`${paths.dir} is not empty and holds no mesh: choose an empty folder or pass --force`);
  }
}

/** Stops the processes whose pid files are in `<dir>/run` (a forced genesis over a running mesh). */
async function stopRecordedProcesses(paths: MeshPaths): Promise<void> {
  if (!existsSync(paths.run)) return;
  for (const name of readdirSync(paths.run)) {
    if (!name.endsWith(".pid")) continue;
    const pid = Number(readFileSync(join(paths.run, name), "utf8").trim());
    if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) await stopPid(pid);
  }
}

/**
 * Creates a new mesh in `options.dir` and starts its bus (see the module comment for the files).
 *
 * Steps: check nats-server is installed, the address parses, the folder holds no mesh (unless
 * `force`) and the port is free; in a staging folder inside it make the mesh key, the bus's TLS key,
 * the mesh's CA (R71) and the bus's certificate issued by it (names: the genesis host, `extraNames`,
 * a cluster's servers, loopback), the first user list
 * (R13: the controller at BOOTSTRAP_SEED's public key with the template's permissions, R15; the operator at
 * a fresh key), the nats-server configuration (checked with `nats-server -t`), the
 * controller's configuration and both credentials (0600); move it into place (mesh.json last); start the bus;
 * record the genesis commit (MeshCreated, the operator's CredentialMinted) as the controller at the
 * genesis seed. With `systemd`, the bus is stopped again after recording and a unit is
 * written to `<dir>/mesh-bus.service` and returned.
 *
 * Throws InstallerError with one line for each bad configuration: nats-server missing,
 * a malformed address, an existing mesh, a port in use, a configuration nats-server refuses, a bus
 * that does not start. Nothing is left half-written: the staging folder, or what was moved into place, is
 * removed on failure.
 */
/**
 * `raw` as an error may print it (R3): whatever stands before an `@` after `//` (a user and
 * password someone typed inside the address) is replaced by `***`. Pure.
 */
export function addressForMessages(raw: string): string {
  return raw.replace(/\/\/[^/]*@/g, "//***@");
}

export async function genesis(options: GenesisOptions): Promise<GenesisResult> {
  const log = options.log;
  const paths = meshPaths(options.dir);
  const binary = findNatsServer(options.searchPath);
  const source = options.addressSource ?? "MESH_BROKER_ADDRESS";
  let address: { scheme: string; host: string; port: number };
  try {
    address = parseBusAddress(options.brokerAddress);
  } catch {
    throw new InstallerError(`${source} "${addressForMessages(options.brokerAddress)}" is not tls://host[:port]${/@/.test(options.brokerAddress) ? ": a user or password never goes inside the address (R3); the credentials travel beside it" : ""}`);
  }
  if (address.scheme !== "tls") {
    throw new InstallerError(`${source} "${formatBusAddress(address)}" must use tls:// (the bus always presents the mesh's certificate, R34)`);
  }
  const genesisAddress = formatBusAddress(address);
  const local = address.host === "127.0.0.1" || address.host === "localhost";
  const listenHost = options.listenHost ?? (local ? "127.0.0.1" : "0.0.0.0");
  const monitorPort = options.monitorPort ?? Math.min(address.port + 4000, 65535);
  const operator = options.operator ?? "admin";
  const node = options.node ? genesisNode(options.node) : undefined;
  const keep = node && dirname(node.stateDir) === paths.dir ? basename(node.stateDir) : null;
  const size = options.cluster ?? 1;
  if (!Number.isInteger(size) || size < 1 || size > 9) throw new InstallerError(`--cluster ${size}: give the number of servers, 3 (2 to 9)`);
  if (size > 1 && options.systemd) {
    throw new InstallerError("--cluster runs every server of the bus on this machine (the embedded default) and writes no systemd units: leave out --systemd or --cluster");
  }
  rejectUnlessEmptyOrForced(paths, options.force ?? false, keep);
  await assertPortFree(listenHost, address.port, source);
  if (monitorPort > 0) await assertPortFree("127.0.0.1", monitorPort);
  const servers = size > 1 ? await clusterPorts(size, listenHost, address.port, monitorPort) : undefined;
  /** Every server's client address on a cluster, the genesis address first (R62). */
  const addresses = servers?.map((s) => formatBusAddress({ ...address, port: s.port }));

  // R54, issue 26: staged inside the folder itself (it may be a mount point: installer/staging.ts).
  const { staging: temp, madeDir } = makeStaging(paths.dir);
  const commits: Commit[] = [];
  let enrolReply: string | undefined;
  try {
    log(`genesis: making the mesh key and the bus certificate in ${paths.dir}`);
    const meshKey = newMeshKey();
    writeFileDurable(join(temp, MESH_KEY_FILE), `${meshKey}\n`, { mode: 0o600 });
    // R71: every name a principal is told at genesis (busCertificateNames of the genesis records).
    const givenNames = certificateNames(options.extraNames ?? []);
    const names = [address.host, ...givenNames, ...(addresses ?? []).map((one) => parseBusAddress(one).host)];
    const tls = await (options.makeCertificate ?? makeBusCertificate)(temp, names);
    const now = options.now ?? new Date().toISOString();

    // The genesis commit, decided here so the carried list and the records say the same thing.
    // The operator's nkey seed (R63): its public key and sealed seed go in the records, the seed in its 0600 file.
    const operatorSecret = newFreshSecret((seed) => sealWithMeshKey(meshKey, seed));
    const decision = decideGenesis(initialState, {
      genesisAddress, fingerprint: tls.fingerprint, bootstrapUser: BOOTSTRAP_USER, operator, operatorSecret, now,
      ...(addresses ? { addresses } : {}), ...(givenNames.length > 0 ? { names: givenNames } : {}),
    });
    if (!decision.ok) throw new InstallerError(decision.refusal.message);
    commits.push({ commandId: GENESIS_COMMAND_ID, entity: decision.entity, events: decision.events });
    let genesisState = evolve(initialState, [{ sequence: 1, commit: commits[0]! }]);
    if (node) {
      // The genesis node's enrolment is `node.enrol`'s own decide, recorded as the second commit (R56).
      // Its keys were generated on it (`mesh host init`, R64): only the public halves are read here.
      const commandId = genesisNodeCommandId(node.name);
      const enrolRequest = { node: node.name, publicKey: node.publicKey, nkey: node.nkey };
      const enrolled = nodeEnrol.decide(genesisState, enrolRequest, { commandId, actor: "installer", now, secrets: [] });
      if (!enrolled.ok) throw new InstallerError(`--node: ${enrolled.refusal.message}`);
      const nodeCommit: Commit = { commandId, entity: enrolled.entity, events: enrolled.events };
      commits.push(nodeCommit);
      genesisState = evolve(genesisState, [{ sequence: 2, commit: nodeCommit }]);
      const reply = nodeEnrol.reply(genesisState, enrolled.events, { openSecret: (sealed) => openWithMeshKey(meshKey, sealed), sealToNode }, enrolled.entity, enrolRequest);
      enrolReply = enrolReplyFile(paths.dir, node.name);
      writeFileDurable(join(temp, basename(enrolReply)), `${JSON.stringify(reply, null, 2)}\n`, { mode: 0o600 });
    }
    const carriedList = renderUserList({ users: carriedUsers(genesisState), busNames: busCertificateNames(genesisState) });
    if (servers) {
      // R60: each server reads its own configuration, so each gets its own copy of the one list.
      const configs = (root: string) => clusterServerConfigs({
        size, root, listenHost, clientPorts: servers.map((s) => s.port), routePorts: servers.map((s) => s.routePort),
        monitorPorts: servers.map((s) => s.monitorPort), certFile: join(root, TLS_CERT_FILE), keyFile: join(root, TLS_KEY_FILE),
      });
      const inTemp = configs(temp);
      const inPlace = configs(paths.dir);
      for (let i = 0; i < size; i += 1) {
        const folder = join(temp, clusterServerDir(i));
        mkdirSync(join(folder, STORE_DIR), { recursive: true });
        writeFileDurable(join(folder, USER_LIST_FILE), carriedList, { mode: 0o644 });
        writeFileDurable(join(folder, SERVER_CONFIG_FILE), renderServerConfig(inTemp[i]!), { mode: 0o644 });
        testServerConfig(binary, join(folder, SERVER_CONFIG_FILE));
        writeFileDurable(join(folder, SERVER_CONFIG_FILE), renderServerConfig(inPlace[i]!), { mode: 0o644 });
      }
    } else {
      writeFileDurable(join(temp, USER_LIST_FILE), carriedList, { mode: 0o644 });
      const serverOptions = (root: string) => ({
        listenHost, port: address.port, monitorPort,
        certFile: join(root, TLS_CERT_FILE), keyFile: join(root, TLS_KEY_FILE), storeDir: join(root, STORE_DIR),
        userListFile: USER_LIST_FILE, pidFile: join(root, "run", "bus.pid"), logFile: busLogFile(root),
      });
      writeFileDurable(join(temp, SERVER_CONFIG_FILE), renderServerConfig(serverOptions(temp)), { mode: 0o644 });
      testServerConfig(binary, join(temp, SERVER_CONFIG_FILE));
      writeFileDurable(join(temp, SERVER_CONFIG_FILE), renderServerConfig(serverOptions(paths.dir)), { mode: 0o644 });
    }

    const env = controllerEnvironment(paths, genesisAddress, size);
    writeFileDurable(
      join(temp, CONTROLLER_ENV_FILE),
      ["# The controller's configuration, written at genesis (read by `mesh controller` and `mesh up`).",
        ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ""].join("\n"),
      { mode: 0o600 },
    );
    // R62: on a cluster every credential lists every server.
    const dialled = { address: genesisAddress, ...(addresses ? { addresses } : {}) };
    writeBusCredential(join(temp, CONTROLLER_CREDENTIAL_FILE), { ...dialled, user: BOOTSTRAP_USER, seed: BOOTSTRAP_SEED, fingerprint: tls.fingerprint });
    writeBusCredential(join(temp, OPERATOR_CREDENTIAL_FILE), { ...dialled, user: `operator-${operator}`, seed: operatorSecret.seed, fingerprint: tls.fingerprint });
    const mesh: MeshFile = {
      genesisAddress, fingerprint: tls.fingerprint, operator, listenHost, port: address.port, monitorPort, createdAt: now,
      ...(servers ? { servers } : {}),
    };
    mkdirSync(join(temp, "logs"));
    mkdirSync(join(temp, "run"));
    if (!servers) mkdirSync(join(temp, STORE_DIR));
    writeFileDurable(join(temp, MESH_FILE), `${JSON.stringify(mesh, null, 2)}\n`, { mode: 0o644 });

    // A forced genesis replaces the mesh there; the genesis node's state folder inside `dir`
    // (`mesh up`'s `.mesh/host`) and a volume's own entries are kept.
    await stopRecordedProcesses(paths);
    clearMeshFolder(paths.dir, keep);
    commitStaging(temp, paths.dir, MESH_FILE);
  } catch (error) {
    undoGenesis(paths.dir, temp, madeDir, keep);
    throw error;
  }

  let bus: BusProcess | undefined;
  const buses: BusProcess[] = [];
  try {
    const mesh = readMeshFile(paths.dir);
    const fingerprint = mesh.fingerprint;
    for (const server of busServers(paths, mesh)) {
      log(`genesis: starting the bus${servers ? ` server ${server.name}` : ""} on ${server.address} (certificate ${fingerprint})`);
      const started = await startBus({
        binary, configFile: server.configFile, logFile: server.logFile,
        host: localHost(listenHost), port: server.port, fingerprint, detached: options.detachBus ?? true,
      });
      buses.push(started);
      bus ??= started;
      writeFileDurable(pidFile(paths.dir, server.process), `${started.pid}\n`, { mode: 0o644 });
    }
    log("genesis: recording the genesis commit as the controller (bootstrap account)");
    await recordGenesis(paths, busServers(paths, mesh).map((s) => s.address), commits, size);
    if (options.systemd && bus) {
      await bus.stop();
      rmSync(pidFile(paths.dir, "bus"), { force: true });
      const unit = systemdUnit(binary, paths.serverConfig);
      const units: Array<[string, string]> = [[BUS_UNIT_FILE, unit], [CONTROLLER_UNIT_FILE, controllerUnit(paths.controllerEnv)]];
      if (node) units.push([HOST_UNIT_FILE, hostUnit(node.name, node.stateDir, genesisBusSettings(paths, mesh))]);
      const unitFiles = units.map(([file, text]) => {
        writeFileDurable(join(paths.dir, file), text, { mode: 0o644 });
        return join(paths.dir, file);
      });
      log(`genesis: wrote ${unitFiles.join(", ")}: install them with systemctl link/enable --now`);
      return { paths, mesh, unit, unitFiles, ...(enrolReply ? { enrolReply } : {}) };
    }
    log(`genesis: mesh created; operator credential in ${paths.operatorCredential} (0600)`);
    return { paths, mesh, ...(bus ? { bus } : {}), buses, ...(enrolReply ? { enrolReply } : {}) };
  } catch (error) {
    for (const one of buses) await one.stop();
    undoGenesis(paths.dir, temp, madeDir, keep);
    throw error;
  }
}

/**
 * The genesis node's name and public keys, checked (R56, R64): a mesh name, `<stateDir>/node.pub`
 * an X25519 public key and `<stateDir>/node.nkey` an nkey user public key, as `mesh host init`
 * writes them (its seed stays in `node.seed`, never read here). Throws InstallerError naming
 * `--node` or `--node-state` and the fix.
 */
function genesisNode(node: { name: string; stateDir: string }): { name: string; stateDir: string; publicKey: string; nkey: string } {
  const problem = nameProblem(node.name);
  if (problem) throw new InstallerError(`--node: ${problem}`);
  const stateDir = resolve(node.stateDir);
  const file = join(stateDir, "node.pub");
  if (!existsSync(file)) throw new InstallerError(`--node-state: ${file} does not exist: run \`mesh host init --state ${stateDir}\` first`);
  const publicKey = readFileSync(file, "utf8").trim();
  if (!isNodePublicKey(publicKey)) throw new InstallerError(`--node-state: ${file} is not a node public key: run \`mesh host init --state ${stateDir} --force\``);
  const nkeyFile = join(stateDir, "node.nkey");
  const nkey = existsSync(nkeyFile) ? readFileSync(nkeyFile, "utf8").trim() : "";
  if (!/^U[A-Z2-7]{55}$/.test(nkey)) {
    throw new InstallerError(`--node-state: ${nkeyFile} is missing or not an nkey public key (made before nkeys?): run \`mesh host init --state ${stateDir} --force\``);
  }
  return { name: node.name, stateDir, publicKey, nkey };
}

/**
 * The four settings of the host agent on the machine running the bus (its `--bus-*` options): the
 * include file receiving the user list, the bus configuration, its pid file, its monitoring
 * endpoint on 127.0.0.1.
 */
export function genesisBusSettings(paths: MeshPaths, mesh: MeshFile): { includeFile: string; configFile: string; pid: string; monitorUrl: string } {
  return { includeFile: paths.userList, configFile: paths.serverConfig, pid: pidFile(paths.dir, "bus"), monitorUrl: `http://127.0.0.1:${mesh.monitorPort}` };
}

/** Where the genesis machine itself dials a bus listening on `listenHost` (0.0.0.0: on 127.0.0.1). */
export function localHost(listenHost: string): string {
  return listenHost === "0.0.0.0" || listenHost === "::" ? "127.0.0.1" : listenHost;
}

/**
 * Appends the genesis commits (the genesis node's enrolment after the genesis commit) as the controller at the genesis seed (R13), through the
 * records adapter (which also raises the CATALOGUE stream). A genesis already recorded (same
 * command id) appends nothing.
 */
async function recordGenesis(paths: MeshPaths, localAddresses: readonly string[], commits: readonly Commit[], replicas: number): Promise<void> {
  const credential = readBusCredential(paths.controllerCredential);
  const { addresses: _recorded, ...single } = credential;
  const nc = await connectToBus(
    { ...single, address: localAddresses[0]!, ...(localAddresses.length > 1 ? { addresses: [...localAddresses] } : {}) },
    { name: "mesh-installer", reconnect: replicas > 1 },
  );
  try {
    // A cluster places a stream of `replicas` copies once its servers have elected a JetStream
    // leader and know each other (until then: "no suitable peers"); the commits are idempotent by
    // command id, so the whole is tried again, bounded.
    const deadline = Date.now() + (replicas > 1 ? 60_000 : 0);
    for (;;) {
      try {
        const catalogue = await openCatalogue(nc, { replicas });
        for (const commit of commits) {
          const result = await catalogue.transact(commit.commandId, () => ({ ok: true, entity: commit.entity, events: commit.events }));
          if (!result.ok) throw new InstallerError(`the genesis commit ${commit.commandId} was refused: ${result.refusal.message}`);
        }
        return;
      } catch (error) {
        if (error instanceof InstallerError || Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await nc.close();
  }
}

/**
 * The ports of a local cluster's servers (issue 14): server 1 takes the genesis address's client
 * port and `monitorPort` (a free one when 0); every other port is one the OS picks, each distinct.
 */
async function clusterPorts(size: number, listenHost: string, port: number, monitorPort: number): Promise<NonNullable<MeshFile["servers"]>> {
  const taken = new Set<number>([port, monitorPort]);
  const pick = async (host: string): Promise<number> => {
    for (;;) {
      const one = await freePort(host);
      if (!taken.has(one)) { taken.add(one); return one; }
    }
  };
  const host = localHost(listenHost);
  const servers: NonNullable<MeshFile["servers"]> = [];
  for (let i = 0; i < size; i += 1) {
    servers.push({
      name: `mesh-bus-${i + 1}`,
      port: i === 0 ? port : await pick(host),
      routePort: await pick(host),
      monitorPort: i === 0 && monitorPort > 0 ? monitorPort : await pick("127.0.0.1"),
    });
  }
  return servers;
}
