/**
 * Steps 1-2 of `mesh up` (up.ts): the genesis address chosen and checked (R8), the local node
 * named, and genesis made in a folder that holds no mesh yet; else the mesh resumed as it was made.
 */
import { existsSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { lookup } from "node:dns/promises";
import { join } from "node:path";
import { makeFolderDurable, writeFileDurable } from "../files/index.ts";
import { initHostKeys, NODE_KEY_FILE } from "../host/index.ts";
import { NAME_PATTERN } from "../names.ts";
import { parseBusAddress } from "../projections/index.ts";
import { genesis, hasMesh, readMeshFile, type MeshPaths } from "../../installer/genesis.ts";
import { freePort, isPortFree } from "../../installer/serverConfig.ts";
import { resumeRefusal, DEFAULT_UP_ADDRESS } from "./plan.ts";
import { UpError } from "./errors.ts";
import type { UpOptions } from "./up.ts";

/** Its host and preferred port (R8); when the port is taken the OS picks a free one (chooseUpAddress). */
export const DEFAULT_UP_HOST = "127.0.0.1";
export const DEFAULT_UP_PORT = 4222;

/**
 * Resolves when `address`'s host resolves on this machine (`resolve`: node's dns lookup, a test's
 * stand-in). `mesh up` runs the bus here and dials it at the genesis address, and the mesh keeps
 * that address for good: one this machine cannot resolve is refused before anything is made.
 * Throws UpError naming `source`, the address, the host and the fix. An address of another form
 * is left to genesis, which refuses it.
 */
export async function addressResolves(
  address: string,
  source: string,
  resolve: (host: string) => Promise<unknown> = (host) => lookup(host),
): Promise<void> {
  let host: string;
  try {
    host = parseBusAddress(address).host.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return; // Not an address at all: genesis refuses it with its own words (and never echoes a password in it, R3).
  }
  try {
    await resolve(host);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UpError(`up: ${source} ${address}: ${host} does not resolve on this machine (${code}), and mesh up dials its own bus there; give a name or address this machine resolves (nothing was made)`);
  }
}

/** The embedded default's genesis address and monitoring port, and whether the preferred port was taken. */
export type UpAddress = { brokerAddress: string; monitorPort: number; fallback: boolean };

/**
 * The genesis address for `mesh up` without `--address`: `tls://127.0.0.1:<preferred>` when that
 * port is free (default 4222, R8), else a port the OS chooses (e.g. Debian's own nats-server holds
 * 4222). The monitoring port is client port + 4000 when free, else one the OS chooses. Ports are
 * free when checked; a race with another program is reported by genesis (InstallerError).
 */
export async function chooseUpAddress(preferred = DEFAULT_UP_PORT, host = DEFAULT_UP_HOST): Promise<UpAddress> {
  const free = await isPortFree(host, preferred);
  const port = free ? preferred : await freePort(host);
  const monitorWanted = Math.min(port + 4000, 65535);
  const monitorPort = monitorWanted !== port && await isPortFree("127.0.0.1", monitorWanted) ? monitorWanted : await freePort("127.0.0.1");
  return { brokerAddress: `tls://${host}:${port}`, monitorPort, fallback: !free };
}

/** This machine's host name as a mesh name (lowercase, dashes), or `local`. */
export function localNodeName(raw = hostname()): string {
  const name = raw.toLowerCase().split(".")[0]!.replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 63);
  return NAME_PATTERN.test(name) ? name : "local";
}

/**
 * Genesis in `paths.dir` when it holds no mesh yet, by the public steps a real machine takes
 * (R56): the local node's keys, then genesis naming it; else the mesh resumed, refused (UpError)
 * when `options` ask for another shape than the one it was made with.
 */
export async function genesisOrResume(options: UpOptions, { paths, hostDir, nodeFile, detached }: { paths: MeshPaths; hostDir: string; nodeFile: string; detached: boolean }): Promise<void> {
  const log = options.log;
  if (!hasMesh(paths.dir)) {
    if (options.brokerAddress !== undefined) await addressResolves(options.brokerAddress, options.addressSource ?? "MESH_BROKER_ADDRESS");
    makeFolderDurable(hostDir);
    const name = existsSync(nodeFile) ? readFileSync(nodeFile, "utf8").trim() : (options.node ?? localNodeName());
    writeFileDurable(nodeFile, `${name}\n`, { mode: 0o644 });
    if (!existsSync(join(hostDir, NODE_KEY_FILE))) initHostKeys(hostDir);
    let chosen: { brokerAddress: string; monitorPort?: number } = { brokerAddress: options.brokerAddress ?? DEFAULT_UP_ADDRESS };
    if (options.brokerAddress === undefined) {
      const preferred = options.preferredPort ?? DEFAULT_UP_PORT;
      const picked = await chooseUpAddress(preferred);
      chosen = picked;
      log(picked.fallback
        ? `up: port ${preferred} on ${DEFAULT_UP_HOST} is taken (another nats-server?): the bus takes ${picked.brokerAddress} instead`
        : `up: the bus takes ${picked.brokerAddress}`);
    }
    await genesis({
      dir: paths.dir, brokerAddress: chosen.brokerAddress, log,
      ...(chosen.monitorPort === undefined ? {} : { monitorPort: chosen.monitorPort }),
      ...(options.addressSource === undefined ? {} : { addressSource: options.addressSource }),
      detachBus: detached,
      node: { name, stateDir: hostDir },
      ...(options.cluster === undefined || options.cluster <= 1 ? {} : { cluster: options.cluster }),
      ...(options.searchPath === undefined ? {} : { searchPath: options.searchPath }),
    });
  } else {
    // `--address`, `--node` and `--cluster` shape a mesh at genesis only: one that exists keeps how it was made.
    const meshFile = readMeshFile(paths.dir);
    const made = { dir: paths.dir, genesisAddress: meshFile.genesisAddress, servers: meshFile.servers?.length ?? 1, ...(existsSync(nodeFile) ? { node: readFileSync(nodeFile, "utf8").trim() } : {}) };
    const refusal = resumeRefusal(made, options);
    if (refusal !== undefined) throw new UpError(refusal);
    log(`up: resuming the mesh in ${paths.dir}`);
  }
}
