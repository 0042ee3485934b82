/**
 * The start row's measurement in a fresh process (issue 13): a controller starts in a process of
 * its own, so its start pays for its own heap, not for the bench's (which holds the million-event
 * state it saved the snapshot from, and whose garbage collection a start in the bench's process
 * paid for). Run as `node --import tsx startChild.ts <server url> <snapshot sequence>`: it reads the
 * snapshot's object raw (get, gunzip, JSON.parse), then opens the catalogue from the snapshot, and
 * prints `{ rawMs, startMs, startedFrom }` as one JSON line.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { connect } from "@nats-io/transport-node";
import { openCatalogue } from "../../src/records/catalogue.ts";
import { openSnapshotStores } from "../../src/records/snapshots.ts";
import { snapshotObject } from "../../src/names.ts";

export type StartChildReport = { rawMs: number; startMs: number; startedFrom: number };

/** Runs this file as a fresh child against the server at `url`; returns what it measured. Throws when the child fails. */
export function startInChild(url: string, sequence: number): Promise<StartChildReport> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), url, String(sequence)], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    proc.stdout.on("data", (chunk: Buffer) => { out += chunk.toString("utf8"); });
    proc.on("error", reject);
    proc.on("exit", (code) => {
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code !== 0) reject(new Error(`the start child exited with ${code}: ${line}`));
      else resolve(JSON.parse(line) as StartChildReport);
    });
  });
}

async function childMain(url: string, sequence: number): Promise<void> {
  const rawConnection = await connect({ servers: url });
  let t = performance.now();
  const body = await (await openSnapshotStores(rawConnection)).objects.getBlob(snapshotObject(sequence));
  JSON.parse(new TextDecoder().decode(gunzipSync(body!)));
  const rawMs = performance.now() - t;
  await rawConnection.close();
  const nc = await connect({ servers: url });
  t = performance.now();
  const opened = await openCatalogue(nc);
  const startMs = performance.now() - t;
  await nc.close();
  console.log(JSON.stringify({ rawMs, startMs, startedFrom: opened.startedFrom } satisfies StartChildReport));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [url, sequence] = process.argv.slice(2);
  childMain(url!, Number(sequence)).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
