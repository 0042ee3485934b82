import type { NatsConnection } from "@nats-io/transport-node";
import type { JsMsg } from "@nats-io/jetstream";
import { declarationFilter } from "../names.ts";
import { boundedText, dropsOf, errorLine, total } from "../bus/total.ts";
import { stageDeclaration, type Applied, type StagedDeclaration } from "./apply.ts";
import { installOnEveryServer } from "./busList.ts";
import { shortDigest, type Declaration as HostDeclaration } from "../contracts/declaration.ts";
import type { HostReport } from "../contracts/report.ts";
import { readPartHeader } from "../contracts/userList.ts";
import {
  appliedReport, failedReport, firstLine, listOutcomeText, messageKind, planApply, planList, readDeclaration,
  type ListInstallOutcome,
} from "./plan.ts";
import { UserListParts } from "./userListParts.ts";
import type { OwnCredential } from "./ownCredential.ts";
import type { Runner } from "./runner.ts";
import type { HostOptions } from "./hostOptions.ts";
import type { AgentLink } from "./agentLink.ts";

/** What the declarations consumer needs from its agent; `publish` sends a report and tells the agent's listeners. */
export type DeclarationsContext = {
  node: string;
  stateDir: string;
  privateKey: string;
  bus: HostOptions["bus"];
  own: OwnCredential;
  runner: Runner;
  link: AgentLink;
  log: (line: string) => void;
  publish: (nc: NatsConnection, report: HostReport, applied: Applied | undefined) => Promise<void>;
};

/** One declaration handled: its report, what was applied, and each server's list outcome (R60). */
type Handled = { report: HostReport; applied?: Applied; installed?: ListInstallOutcome[] };

/**
 * The declarations consumer's side of the host agent (agent.ts): each message of the node's
 * CONTROL consumer, a declaration or a user-list part, handled (handle). Its own state: the parts
 * stored so far and the latest declaration whose list lacked parts (applied again when they arrive).
 */
export class Declarations {
  private readonly parts: UserListParts;
  /** The latest declaration whose user list lacked parts, applied again when they arrive. */
  private pending: HostDeclaration | undefined;

  /**
   * R65: nothing a message brings ends the loop: a subject that is not this node's declaration or
   * part, or a handler that throws, is one bounded line (dropsOf); a message that failed is
   * acknowledged, as one that cannot be applied is (else CONTROL would bring it forever).
   */
  readonly handle: (nc: NatsConnection, message: JsMsg) => Promise<void>;

  constructor(private readonly context: DeclarationsContext) {
    this.parts = new UserListParts(context.stateDir);
    const { node, log } = context;
    const drop = dropsOf(log);
    this.handle = total(async (nc: NatsConnection, message: JsMsg) => {
      if (messageKind(message.subject, node) === "foreign") {
        drop("host-subject", `host ${node}: a message on ${boundedText(message.subject)} reached its declaration consumer: dropped, not ${declarationFilter(node)} (R65)`);
        return;
      }
      if (messageKind(message.subject, node) === "part") await this.handlePart(nc, message);
      else await this.handleDeclaration(nc, message);
    }, (error, _nc, message) => {
      drop("host-failed", `host ${node}: a message on ${boundedText(message.subject)}: dropped, ${errorLine(error)} (R65)`);
      message.ack();
    });
  }

  /** A declaration: applied (or its reading's failure reported), acknowledged either way, logged and reported. */
  private async handleDeclaration(nc: NatsConnection, message: JsMsg): Promise<void> {
    let raw: unknown;
    try {
      raw = message.json();
    } catch {
      raw = undefined;
    }
    const read = readDeclaration(raw, message.seq, this.context.node);
    const started = Date.now();
    const { report, applied, installed }: Handled = read.ok ? await this.apply(read.declaration, message.seq) : { report: read.report };
    // Acknowledged either way: a declaration that cannot be applied is reported, and the next push
    // brings a new one (CONTROL consumers never dead-letter, R22, so an unacked one would loop).
    try {
      await message.ackAck();
    } catch {
      message.ack();
    }
    this.logOutcome({ report, applied, installed }, started);
    await this.context.publish(nc, report, applied);
  }

  /** A user-list part: stored, acknowledged, and the pending declaration applied when it completes it. */
  private async handlePart(nc: NatsConnection, message: JsMsg): Promise<void> {
    let completes = false;
    try {
      const part = readPartHeader((name) => message.headers?.get(name) ?? "");
      this.parts.store(part, message.data);
      completes = this.pending?.userList?.digest === part.digest && this.parts.stored(part.digest).length >= this.pending.userList.parts;
    } catch (error) {
      this.context.log(`host ${this.context.node}: message #${message.seq} on ${message.subject} ignored: ${firstLine(error)}`);
    }
    message.ack();
    if (completes && this.pending) {
      const started = Date.now();
      const handled = await this.apply(this.pending, message.seq);
      this.logOutcome(handled, started);
      await this.context.publish(nc, handled.report, handled.applied);
    }
  }

  /**
   * Applies one declaration as planApply and planList say, all or nothing (R69): every check first
   * (its list's parts, its own credential), its files staged; then its own credential saved, the
   * user list installed, and the files committed with what the re-checks apply (R55). A failure
   * undoes the credential and drops what was staged. Returns its report; never throws.
   */
  private async apply(declaration: HostDeclaration, seq: number): Promise<Handled> {
    const { node, stateDir, privateKey, bus, own, runner, link, log } = this.context;
    const missing: { parts?: number[] } = {};
    let staged: StagedDeclaration | undefined;
    let undo: (() => void) | undefined;
    try {
      const plan = planApply(declaration, node, seq, bus !== undefined);
      if (!plan.ok) throw new Error(plan.error);
      if (plan.list.kind === "no-bus") throw new Error(plan.list.error);
      const adoption = plan.adopt ? own.planAdoption(plan.adopt) : null;
      const listText = plan.list.kind === "assemble" ? this.assembledList(declaration, plan.list.ref, missing) : undefined;
      staged = stageDeclaration(stateDir, declaration, privateKey, link.certificatePem);
      // Before any user list: this node may hold the broker, and its reload drops the connection, which must come back with the new key (R50).
      if (adoption) undo = own.adopt(adoption);
      const done = listText === undefined ? undefined : await installOnEveryServer(listText, bus!, (line) => log(`host ${node}: ${line}`));
      const report = { ...appliedReport(node, declaration, listText), ...(done?.servers ? { servers: done.servers } : {}) };
      // Read again: a reconnect during the install may have pinned a new certificate (R57).
      const certificatePem = link.certificatePem;
      const applied = staged.commit({ declaration, report, ...(certificatePem === undefined ? {} : { certificatePem }) });
      runner.apply(declaration);
      this.pending = undefined;
      this.parts.discardExcept();
      return { report, applied, ...(done ? { installed: done.installed } : {}) };
    } catch (error) {
      try {
        undo?.();
      } catch (undoError) {
        log(`host ${node}: its credential could not be put back: ${firstLine(undoError)}`);
      }
      return { report: failedReport(node, declaration, error, missing.parts) };
    } finally {
      staged?.discard();
    }
  }

  /**
   * The user list `ref` names, from its stored parts (planList); throws when parts are missing
   * (the declaration kept as pending, `missing.parts` set) or the parts are refused (discarded).
   */
  private assembledList(declaration: HostDeclaration, ref: Parameters<UserListParts["assemble"]>[0], missing: { parts?: number[] }): string {
    const list = planList(this.parts.assemble(ref), ref);
    if (list.kind === "await-parts") {
      this.pending = declaration;
      missing.parts = list.missing;
      this.parts.discardExcept(list.keep);
      throw new Error(list.error);
    }
    this.pending = undefined;
    if (list.kind === "refuse") {
      this.parts.discard(list.discard);
      throw new Error(list.error);
    }
    return list.text;
  }

  /** One line: what an applied declaration wrote and each server's list outcome (R60), or why it was not applied. */
  private logOutcome({ report, applied, installed }: Handled, started: number): void {
    const { node, log } = this.context;
    const short = shortDigest(report.digest);
    if (report.ok && applied) {
      const list = installed === undefined || installed.length === 0 ? "" : `, ${listOutcomeText(installed)}`;
      log(
        `host ${node}: applied declaration ${short} in ${Date.now() - started} ms: ${applied.owned.length} files owned, ` +
          `${applied.written.length} written, ${applied.removed.length} removed, ${applied.kept.length} found and kept${list}`,
      );
    } else {
      log(`host ${node}: declaration ${short} not applied: ${report.error}`);
    }
  }
}
