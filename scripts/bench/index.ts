/**
 * `npm run bench -- <name> [args]`: runs scripts/bench/<name>.ts's `run(args)`.
 * Minimal dispatcher; each bench prints its own table (or JSON with --json).
 */
const [name, ...args] = process.argv.slice(2);
if (!name || !/^[a-z][a-z0-9-]*$/.test(name)) {
  console.error("usage: npm run bench -- <name> [--json]   (name: a file of scripts/bench, e.g. compose)");
  process.exit(2);
}
const bench = (await import(`./${name}.ts`)) as { run?: (args: string[]) => Promise<void> };
if (typeof bench.run !== "function") {
  console.error(`scripts/bench/${name}.ts exports no run(args)`);
  process.exit(2);
}
await bench.run(args);
