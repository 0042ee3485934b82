/**
 * `npm run bench -- <name> [args]`: runs scripts/bench/<name>.ts's exported `run(args)`
 * (records, commands, compose, push, ...). Each bench prints its own table, or JSON with --json.
 * `npm run bench [-- --quick] [-- --only replay,push]` prints issue 13's table (table.ts).
 */
import { readdirSync } from "node:fs";

const available = readdirSync(import.meta.dirname)
  .filter((file) => /^[a-z][a-z0-9-]*\.ts$/.test(file) && file !== "index.ts")
  .map((file) => file.slice(0, -3))
  .sort();
// No bench named (nothing, or only options): the whole table of issue 13 (table.ts).
const given = process.argv.slice(2);
const [name, ...args] = given.length === 0 || given[0]!.startsWith("--") ? ["table", ...given] : given;
if (!name || !available.includes(name)) {
  console.error(`usage: npm run bench -- <${available.join("|")}> [--json]`);
  process.exit(2);
}
const bench = (await import(`./${name}.ts`)) as { run?: (args: string[]) => Promise<void> };
if (typeof bench.run !== "function") {
  console.error(`scripts/bench/${name}.ts exports no run(args)`);
  process.exit(2);
}
await bench.run(args);
