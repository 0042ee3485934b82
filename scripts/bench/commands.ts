/**
 * `npm run bench -- commands [--count N] [--json]`: the command round trip (library call →
 * validated → decided → appended, fenced → reply) against a raw JetStream publish-with-ack round
 * trip, in the same run on the same nats-server, both on file storage, and against the floor: a raw
 * publish+ack, a fsynced line append and a request/reply echo in sequence. Goal: p50 ≤ 1.2x the floor.
 *
 * The commands alternate `assign` and `unassign` of one module on one node, so every one appends
 * one commit. The controller keeps the records' mark in a state folder of its own, as it runs
 * (keptMark, R43): every command's reply waits for its line on disk (one fsync). Each kind warms up first, then the kinds run in alternating blocks (BLOCK); times
 * are per round trip, in milliseconds.
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { enrolRequest } from "../../test/support/enrol.ts";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { startCommandMesh } from "../../test/support/commandMesh.ts";
import { writeRecordsMark } from "../../src/bootstrap/recordsMark.ts";
import { sendCommand } from "../../src/client/send.ts";
import { inboxPrefix } from "../../src/names.ts";
import { evolve } from "../../src/projections/index.ts";
import { sizeIn } from "../../src/projections/buckets.ts"; // the driver's `applied` (projections/state.ts)

type Stats = { name: string; count: number; p50: number; p90: number; p99: number; mean: number; max: number };
import { option } from "./args.ts";

function stats(name: string, samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    name,
    count: sorted.length,
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    mean: round(sorted.reduce((a, b) => a + b, 0) / sorted.length),
    max: round(sorted.at(-1)!),
  };
}

/** Round trips of one kind measured in a row before the next kind's block. */
const BLOCK = 100;

export type CommandsResult = { count: number; warmup: number; rows: Stats[]; p50Ratio: number; floorRatio: number; goal: string; met: boolean };

/**
 * Measures `count` command round trips, raw publish+ack round trips and core request/reply echoes
 * on one fresh command mesh (see the module comment); rows in that order, then one commit's fold.
 */
export async function measureCommands(count: number): Promise<CommandsResult> {
  if (!Number.isInteger(count) || count < 10) throw new Error("--count takes a whole number of at least 10");
  const warmup = Math.min(200, Math.floor(count / 10));

  // The controller as it runs: it keeps the records' mark in its state folder (R43), a durable
  // write on every advance of the fold, so every command pays it as in production.
  const stateDir = mkdtempSync(join(tmpdir(), "mesh-bench-state-"));
  const mesh = await startCommandMesh({ stateDir });
  const client = await connect({ servers: mesh.server.url, inboxPrefix: inboxPrefix("operator-bench"), name: "bench-operator" });
  try {
    // The mesh the commands act on: one node, one module.
    const enrolled = await sendCommand(client, "operator-bench", "node.enrol", enrolRequest("alpha"));
    const registered = await sendCommand(client, "operator-bench", "module.register", { manifest: { name: "bench", version: "1" } });
    if (!enrolled.ok || !registered.ok) throw new Error(`bench setup refused: ${JSON.stringify(enrolled.ok ? registered : enrolled)}`);

    // Raw: a stream of its own on the same server, file storage, a body the size of a commit.
    const jsm = await jetstreamManager(client);
    const js = jetstream(client);
    await jsm.streams.add({ name: "BENCH_RAW", subjects: ["bench.raw.>"], storage: StorageType.File });
    const body = new TextEncoder().encode(JSON.stringify({
      commandId: "00000000-0000-0000-0000-000000000000",
      entity: { kind: "module", id: "bench" },
      events: [{ type: "ModuleAssigned", module: "bench", node: "alpha", actor: "operator-bench", commandId: "00000000-0000-0000-0000-000000000000", at: new Date().toISOString() }],
    }));

    // The three kinds of round trip in alternating blocks, so drift in this shared machine's load
    // hits each alike (measured one after the other, the ratio moved from 1.1x to 1.7x between runs).
    const echoResponder = client.subscribe("bench.echo", { callback: (_e, m) => { m.respond(m.data); } });
    let verbs = 0;
    let marks = 0;
    const markDir = mkdtempSync(join(stateDir, "mark-alone-"));
    // The floor's append: a line appended and fsynced on a file kept open, on the same disk.
    const floorFd = openSync(join(markDir, "floor.log"), "a", 0o600);
    const kinds: Array<{ samples: number[]; once: () => Promise<unknown> }> = [
      { samples: [], once: () => js.publish("bench.raw.module.bench", body) },
      {
        samples: [],
        once: async () => {
          const verb = verbs++ % 2 === 0 ? "assign" : "unassign";
          const reply = await sendCommand(client, "operator-bench", verb, { module: "bench", node: "alpha" });
          if (!reply.ok) throw new Error(`${verb} refused during the bench: ${reply.error.code}: ${reply.error.message}`);
        },
      },
      { samples: [], once: () => client.request("bench.echo", body) },
      // What the mark adds to a command, alone: one line appended and fsynced beside the bus's own writes.
      { samples: [], once: async () => { writeRecordsMark(markDir, { lastSequence: (marks += 1), streamCreated: "bench" }); } },
      // The command's floor (issue 28): what a command cannot do without, as one raw sequence.
      {
        samples: [],
        once: async () => {
          await js.publish("bench.raw.module.bench", body);
          writeSync(floorFd, `\n{"lastSequence":${(marks += 1)},"streamCreated":"bench"}\n`);
          fsyncSync(floorFd);
          await client.request("bench.echo", body);
        },
      },
    ];
    for (const kind of kinds) for (let i = 0; i < warmup; i += 1) await kind.once();
    for (let done = 0; done < count; done += BLOCK) {
      for (const kind of kinds) {
        for (let i = 0; i < Math.min(BLOCK, count - done); i += 1) {
          const started = performance.now();
          await kind.once();
          kind.samples.push(performance.now() - started);
        }
      }
    }
    const [raw, command, echo, mark, floorSequence] = kinds.map((k) => k.samples) as [number[], number[], number[], number[], number[]];
    closeSync(floorFd);

    echoResponder.unsubscribe();
    // A reference that explains the figure: the fold of one commit into the state as it ends up.
    const fold: number[] = [];
    const state = mesh.catalogue.state;
    const commit = JSON.parse(new TextDecoder().decode(body)) as Parameters<typeof evolve>[1][number]["commit"];
    for (let i = 0; i < 200; i += 1) {
      const started = performance.now();
      evolve(state, [{ sequence: state.sequence + 1, commit: { ...commit, commandId: `fold-${i}` } }]);
      fold.push(performance.now() - started);
    }

    const rows = [
      stats("raw JetStream publish+ack", raw),
      stats("command round trip (assign/unassign)", command),
      stats("core request/reply echo (the command's extra hop)", echo),
      stats("records mark written alone (append + fsync, R43)", mark),
      stats("floor: raw publish+ack, then a line appended + fsynced, then the echo", floorSequence),
      stats(`evolve of one commit (state with ${sizeIn(state.applied)} applied ids)`, fold),
    ];
    const ratio = Math.round((rows[1]!.p50 / rows[0]!.p50) * 100) / 100;
    const floor = Math.round((rows[1]!.p50 / rows[4]!.p50) * 100) / 100;
    return { count, warmup, rows, p50Ratio: ratio, floorRatio: floor, goal: "p50 <= 1.2x the floor", met: floor <= 1.2 };
  } finally {
    await client.close();
    await mesh.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

export async function run(args: string[]): Promise<void> {
  const json = args.includes("--json");
  const result = await measureCommands(Number(option(args, "--count") ?? 2000));
  const { rows, p50Ratio: ratio, floorRatio: floor } = result;
  {
    if (json) {
      console.log(JSON.stringify(result, null, 2));
    } else {
      const columns = ["name", "count", "p50", "p90", "p99", "mean", "max"] as const;
      const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
      const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
      console.log(line(columns.map((c) => (c === "name" ? c : `${c}${c === "count" ? "" : " ms"}`))));
      for (const row of rows) console.log(line(columns.map((c) => String(row[c]))));
      console.log(`command p50 / floor p50 = ${floor}x (goal ≤ 1.2x: ${result.met ? "met" : "NOT met"}); command p50 / raw p50 = ${ratio}x`);
    }
  }
}
