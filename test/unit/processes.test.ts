import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { isAlive } from "../../installer/bus.ts";

/** The state letter of `pid` in /proc (Linux), or undefined. */
function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0];
  } catch {
    return undefined;
  }
}

describe("isAlive: a process that exited and waits to be reaped", { skip: !existsSync("/proc/self/stat") }, () => {
  let parent: ChildProcess;
  let zombie = 0;

  before(async () => {
    // A shell starts a short child, then becomes a long sleep that never reaps it: the child
    // exits and stays a zombie, as a daemon of `mesh up` does under an init that reaps late.
    parent = spawn("sh", ["-c", "sleep 0.05 & echo $!; exec sleep 30"], { stdio: ["ignore", "pipe", "ignore"] });
    zombie = await new Promise<number>((resolve) => parent.stdout!.once("data", (data: Buffer) => resolve(Number(data.toString().trim()))));
    for (let i = 0; i < 500 && procState(zombie) !== "Z"; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(procState(zombie), "Z", "the child is a zombie");
  });
  after(() => {
    parent?.kill("SIGKILL");
  });

  it("is gone: mesh down stops waiting for it when it exits, not when its parent gets round to reaping it", () => {
    assert.equal(isAlive(zombie), false);
    assert.equal(isAlive(process.pid), true);
  });
});
