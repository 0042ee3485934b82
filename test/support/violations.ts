import type { NatsConnection } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/nats-core";

/**
 * Collects every permissions violation the bus reports to `nc` (publishes and subscriptions it
 * refused), in arrival order, into the returned array, until the connection closes.
 */
export function watchViolations(nc: NatsConnection): PermissionViolationError[] {
  const violations: PermissionViolationError[] = [];
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "error" && status.error instanceof PermissionViolationError) violations.push(status.error);
    }
  })();
  return violations;
}
