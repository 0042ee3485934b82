import { z } from "zod";
import { CONTRACT_VERSIONS, parseContract, versionField } from "./version.ts";

/**
 * R72: one module's run state in a node's report. `state`: `starting` (spawned, not yet up
 * RUNNING_AFTER_MS), `running`, `exited` (with `code` or `signal`, `error` when it could not be
 * spawned at all; `backoffUntil` says when it is started again), `stopping`, `runtime-missing`
 * (`run.image` with neither podman nor docker on the node), `not-run` (`reason`: no `run`, or
 * `run.by` is "mesh"). `restarts` counts the starts after the first. R73: `startedWithNkey` is the
 * nkey public key of the seed the running process was started with, `startedWithEnv` the sha256
 * of the `env` file it was started with.
 */
export const ModuleRun = z
  .object({
    module: z.string(),
    state: z.enum(["starting", "running", "exited", "stopping", "runtime-missing", "not-run"]),
    pid: z.number().int().optional(),
    code: z.number().int().nullable().optional(),
    signal: z.string().optional(),
    error: z.string().optional(),
    reason: z.string().optional(),
    restarts: z.number().int().nonnegative().default(0),
    backoffUntil: z.string().optional(),
    startedWithNkey: z.string().optional(),
    startedWithEnv: z.string().optional(),
  })
  .loose();
export type ModuleRun = z.infer<typeof ModuleRun>;

/**
 * A node's report (R32): what a host publishes on `reportSubject(node)` after each declaration it
 * applied or refused, and after a re-check that wrote drifted files back (R55). The host writes
 * it; the controller reads it (push waits on it, the REPORTS stream keeps the last per node and the
 * `reports` verb serves it, R43 watches its `recordsSequence`). Pure.
 *
 * What a reader may believe of it: only what its sender can know and is entitled to say. The bus
 * lets a node publish on its own report subject alone, so the node a report speaks for is the node
 * of its subject (nodeOfReportSubject); a body whose `node` names another is not a report of
 * anyone's. `recordsSequence` is evidence that the records are behind only with the controller's
 * `recordsTag` on it (R43); `users` and `keys` count only from a node holding mesh-broker in the
 * records (R44). `recordsTag` is an optional field, so `v` stays 1 and a report from before it
 * existed reads as before.
 */
export const HostReport = z
  .object({
    v: versionField("report"),
    node: z.string().min(1),
    digest: z.string(),
    ok: z.boolean(),
    /** Why the declaration was not applied (never a password, R3). Present when ok is false. */
    error: z.string().optional(),
    /** The user-list parts still missing when ok is false for that reason (0-based indexes). */
    missingParts: z.array(z.number().int().nonnegative()).optional(),
    /**
     * The records' sequence of the declaration applied (its `recordsSequence`), when it named one:
     * a report ahead of the records shows them restored or their tail lost (R43).
     */
    recordsSequence: z.number().int().nonnegative().optional(),
    /**
     * The declaration's `recordsTag` as it came (R43): the controller's tag on (node, digest,
     * recordsSequence). A node cannot make one: without it, or with one that does not verify, the
     * report's `recordsSequence` is no evidence.
     */
    recordsTag: z.string().optional(),
    /** The users on the installed list, by name (the broker's holder, after installing one, R43/R44). */
    users: z.array(z.string()).optional(),
    /**
     * The nkey public key of each user on the installed list, by name (beside `users`): after a
     * restore, a node's key as the bus last ran it (R44, R64: nobody but the node can mint one).
     */
    keys: z.record(z.string(), z.string()).optional(),
    /**
     * R55: the files of this declaration a re-check found missing or changed and wrote back (paths
     * under the state folder, sorted). Present only on a report a re-check published.
     */
    drift: z.array(z.string()).optional(),
    /**
     * R60: on the broker's holder of a cluster, each server's outcome of the user list this report's
     * declaration carried, in server order: installed (`changed` when written and reloaded) or
     * missed (`error` says why; the next push sends it again). Absent when no list was installed.
     */
    servers: z.array(z.object({ server: z.string(), ok: z.boolean(), changed: z.boolean().optional(), error: z.string().optional() })).optional(),
    /**
     * R72: the run state of each module of the node's declaration, by module name, sorted: what the
     * agent runs now (`modules` is absent on a report from before the runner; `v` stays 1).
     */
    modules: z.array(ModuleRun).optional(),
  })
  .loose();
export type HostReport = z.infer<typeof HostReport>;



/**
 * R72: modules' run states in one line for a person (`mesh status`, `nodes`, `reports`):
 * `echo running, web exited 1 (3 restarts, again at 07:10:03Z), cache runtime-missing`; "-" for none.
 */
export function moduleRunsText(modules: readonly ModuleRun[] | undefined): string {
  if (modules === undefined || modules.length === 0) return "-";
  return modules.map((m) => {
    const how = m.state !== "exited" ? "" : m.error !== undefined ? ` (${m.error})` : m.signal !== undefined ? ` by ${m.signal}` : m.code !== undefined && m.code !== null ? ` ${m.code}` : "";
    const again = m.backoffUntil === undefined ? "" : `, again at ${m.backoffUntil.slice(11, 19)}Z`;
    const restarts = m.restarts > 0 || again !== "" ? ` (${m.restarts} restart${m.restarts === 1 ? "" : "s"}${again})` : "";
    return `${m.module} ${m.state}${how}${restarts}`;
  }).join(", ");
}
/** One server's outcome of a user list (R60). */
export type ServerListOutcome = NonNullable<HostReport["servers"]>[number];

/**
 * A report as received (the parsed JSON of a report message), checked against the contract.
 * Throws ContractError: `unsupported-version` naming `v` for a host of another version,
 * `bad-message` naming the field otherwise.
 */
export function parseHostReport(message: unknown): HostReport {
  return parseContract("report", HostReport, message, "a node's report");
}

/** A report as the host publishes it: stamped with this build's version, then the fields given. */
export function stampReport(report: HostReport): HostReport {
  return { ...report, v: CONTRACT_VERSIONS.report };
}
