/**
 * A host applying one declaration in a child process, killed -9 before its `killAt`-th change to
 * the file system (a file or folder made, renamed or removed), for the crash test of R69 (issue 26).
 * The count is taken by wrapping node:fs's mutating calls and publishing the wrappers to every ES
 * module importing them (syncBuiltinESMExports), so the code under test is not changed for it.
 *
 * Usage: tsx applyChild.ts <stateDir> <job.json> <killAt>; job.json is `{declaration, privateKey,
 * certificatePem, report}`. Prints `changes <n>` when it finished without being killed.
 */
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";

const [stateDir, jobFile, killAtText] = process.argv.slice(2);
const killAt = Number(killAtText);
let changes = 0;
const mutating = ["renameSync", "unlinkSync", "rmdirSync", "rmSync", "mkdirSync", "linkSync", "symlinkSync", "writeFileSync", "copyFileSync"] as const;
const count = () => {
  changes += 1;
  if (changes === killAt) process.kill(process.pid, "SIGKILL");
};
const table = fs as unknown as Record<string, (...args: unknown[]) => unknown>;
for (const name of mutating) {
  const original = table[name]!;
  table[name] = (...args: unknown[]) => { count(); return original(...args); };
}
// An open that may create a file is a change too (a write-only or read-write open).
const originalOpen = table.openSync!;
table.openSync = (...args: unknown[]) => {
  const flags = args[1];
  const writes = typeof flags === "number" ? (flags & (fs.constants.O_WRONLY | fs.constants.O_RDWR)) !== 0 : typeof flags === "string" && /[wax+]/.test(flags);
  if (writes) count();
  return originalOpen(...args);
};
syncBuiltinESMExports();

const { applyDeclaration } = await import("../../src/host/apply.ts");
const job = JSON.parse(fs.readFileSync(jobFile!, "utf8"));
applyDeclaration(stateDir!, job.declaration, job.privateKey, job.certificatePem, { declaration: job.declaration, report: job.report, certificatePem: job.certificatePem });
process.stdout.write(`changes ${changes}\n`);
