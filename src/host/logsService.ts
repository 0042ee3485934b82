import type { NatsConnection } from "@nats-io/transport-node";
import { logsSubject } from "../names.ts";
import { LogsRequest, type LogsReply } from "../contracts/logs.ts";
import type { Runner } from "./runner.ts";

/**
 * The agent's answer to `mesh logs` (R72): on `logsSubject(node)` (only operators may publish
 * there, only this node subscribes), the tail of one of its modules' output, bounded
 * (moduleLog.ts). A question it cannot read is answered with a refusal, never dropped in silence.
 * The subscription ends with the connection.
 */
export function serveLogs(nc: NatsConnection, node: string, runner: Runner, log: (line: string) => void): void {
  nc.subscribe(logsSubject(node), {
    callback: (error, message) => {
      if (error) return;
      let reply: LogsReply;
      try {
        const parsed = LogsRequest.safeParse(message.json());
        if (!parsed.success) {
          reply = { ok: false, code: "bad-request", message: `a logs question is {module, lines?, from?}: ${parsed.error.issues[0]?.path.join(".") ?? ""} ${parsed.error.issues[0]?.message ?? ""}` };
        } else {
          const tail = runner.logs(parsed.data.module, parsed.data.lines, undefined, parsed.data.from);
          reply = tail === null
            ? { ok: false, code: "no-module", message: `node ${node} has run no module "${parsed.data.module.slice(0, 80)}": it was not in a declaration this node applied (a module assigned without a credential is left out: \`mesh push\` names it), or it is assigned elsewhere (\`mesh get modules\`)` }
            : { ok: true, node, module: parsed.data.module, ...tail };
        }
      } catch (failure) {
        reply = { ok: false, code: "bad-request", message: `a logs question must be JSON: ${failure instanceof Error ? failure.message : String(failure)}` };
      }
      try {
        message.respond(JSON.stringify(reply));
      } catch (failure) {
        log(`host ${node}: a logs answer was not sent: ${failure instanceof Error ? failure.message : String(failure)}`);
      }
    },
  });
}
