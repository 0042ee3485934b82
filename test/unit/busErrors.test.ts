/**
 * Issue 12: errors are classified by the NATS client's own classes and the JetStream API's codes,
 * in one place (src/bus/errors.ts), never by message text; our adapters' errors carry a kind
 * (BusConnectError.kind, ConfigError.problem). Each case is built from the real error class.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { errors } from "@nats-io/nats-core";
import { JetStreamApiError } from "@nats-io/jetstream";
import {
  dialFailureOf, transientBusConditionOf, isAuthenticationTimeout, isAuthorizationRefusal, isConsumerNotFound, isPayloadTooLarge, isStreamNotFound, isTimeout, isWrongLastSequence, jetStreamCodeOf,
} from "../../src/bus/errors.ts";
import { BusConnectError, CertificateMismatch, connectToBus } from "../../src/bus/connect.ts";
import { ConfigError, parseControllerConfig } from "../../src/config.ts";
import { CommandFailed, replyErrorOf } from "../../src/serve/server.ts";

const apiError = (status: number, code: number, description: string) => new JetStreamApiError({ code: status, err_code: code, description });

describe("issue 12: bus errors by class and code, not by text", () => {
  it("the bus refusing the credential: AuthorizationError and UserAuthenticationExpiredError, also as a cause; a plain Error saying so is not", () => {
    const violation = errors.AuthorizationError.parse("Authorization Violation")!;
    assert.ok(violation instanceof errors.AuthorizationError);
    assert.equal(isAuthorizationRefusal(violation), true);
    assert.equal(isAuthorizationRefusal(errors.UserAuthenticationExpiredError.parse("User Authentication Expired")), true);
    assert.equal(isAuthorizationRefusal(new Error("wrapped", { cause: violation })), true);
    assert.equal(isAuthorizationRefusal(new BusConnectError("nats://x:4222", "refused", { cause: violation, kind: "unauthorized" })), true);
    assert.equal(isAuthorizationRefusal(new Error("authorization violation in a message a module wrote")), false);
    assert.equal(isAuthorizationRefusal(new errors.PermissionViolationError("Permissions Violation", "publish", "a.b")), false);
  });

  it("R50: an authentication timeout (the bus waited too long for the signed nonce: a reconnect storm, a loaded machine) is no refusal, though nats.js gives it the AuthorizationError class", () => {
    // The server's -ERR as nats.js parses it (ProtocolHandler.toError: AuthorizationError.parse).
    const late = errors.AuthorizationError.parse("'Authentication Timeout'")!;
    assert.ok(late instanceof errors.AuthorizationError);
    assert.equal(isAuthenticationTimeout(late), true);
    assert.equal(isAuthenticationTimeout(new Error("wrapped", { cause: late })), true);
    assert.equal(isAuthorizationRefusal(late), false, "it says nothing of which key the bus's list holds");
    assert.equal(isAuthorizationRefusal(new Error("wrapped", { cause: late })), false);
    assert.equal(dialFailureOf(late).kind, "timeout");
    assert.equal(isAuthenticationTimeout(errors.AuthorizationError.parse("Authorization Violation")), false);
    assert.equal(isAuthenticationTimeout(new Error("Authentication Timeout in a plain error")), false);
  });

  it("a dial's failure gets its kind: unauthorized, refused, timeout, other; the reason never echoes options", () => {
    assert.equal(dialFailureOf(errors.AuthorizationError.parse("Authorization Violation")).kind, "unauthorized");
    assert.equal(dialFailureOf(new errors.TimeoutError()).kind, "timeout");
    assert.equal(dialFailureOf(new errors.ConnectionError("connection refused")).kind, "refused");
    assert.equal(dialFailureOf(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })).kind, "refused");
    assert.deepEqual(dialFailureOf(new Error("something else\nsecond line")), { kind: "other", reason: "something else" });
    assert.equal(dialFailureOf(new Error("Authorization timeout in a plain error")).kind, "other", "text alone classifies nothing");
  });

  it("BusConnectError carries its kind: a closed port is `refused`, a pinned certificate mismatch `certificate`", async () => {
    const refused = await connectToBus({ address: "tls://127.0.0.1:1", user: "u", password: "p", fingerprint: Array(32).fill("AB").join(":") }, { reconnect: false, timeoutMs: 2_000 }).catch((e: unknown) => e);
    assert.ok(refused instanceof BusConnectError, String(refused));
    assert.equal(refused.kind, "refused");
    assert.equal(new CertificateMismatch("tls://x:4222", "AA", "BB").kind, "certificate");
  });

  it("timeouts: TimeoutError, also as a cause", () => {
    assert.equal(isTimeout(new errors.TimeoutError()), true);
    assert.equal(isTimeout(new errors.RequestError("request failed", { cause: new errors.TimeoutError() })), true);
    assert.equal(isTimeout(new Error("timeout")), false);
  });

  it("JetStream API codes: 10071/10164 wrong last sequence, 10014 consumer not found, 10059 stream not found", () => {
    assert.equal(isWrongLastSequence(apiError(400, 10071, "wrong last sequence: 7")), true);
    assert.equal(isWrongLastSequence(apiError(400, 10164, "wrong last sequence: unknown")), true);
    assert.equal(isWrongLastSequence(new Error("wrong last sequence: 7")), false);
    assert.equal(isConsumerNotFound(apiError(404, 10014, "consumer not found")), true);
    assert.equal(isConsumerNotFound(apiError(404, 10059, "stream not found")), false);
    assert.equal(isStreamNotFound(apiError(404, 10059, "stream not found")), true);
    assert.equal(isStreamNotFound(new Error("stream not found")), false);
    assert.equal(jetStreamCodeOf(new Error("wrapped", { cause: apiError(404, 10014, "consumer not found") })), 10014);
    assert.equal(jetStreamCodeOf(new errors.TimeoutError()), undefined);
  });

  it("a payload over max_payload: the client's InvalidArgumentError for 'payload' (no class or code of its own)", () => {
    assert.equal(isPayloadTooLarge(errors.InvalidArgumentError.format("payload", "max_payload size exceeded")), true);
    assert.equal(isPayloadTooLarge(errors.InvalidArgumentError.format("subject", "is not valid")), false);
  });
});

describe("issue 12: ConfigError says whether a variable is unset or invalid", () => {
  it("a required variable left out is `unset` naming it; a malformed one is `invalid`", () => {
    const unset = (() => { try { parseControllerConfig({}); } catch (error) { return error; } })();
    assert.ok(unset instanceof ConfigError);
    assert.equal(unset.problem, "unset");
    assert.ok(unset.variables.length === 1);
    assert.equal(new ConfigError(["MESH_KEY_FILE"], "MESH_KEY_FILE: not a key").problem, "invalid");
  });
});

describe("a transient bus condition, told apart from a fault (a new-user trial's `internal` refusals on a cluster)", () => {
  const noResponders = () => new errors.RequestError("no responders: '$JS.API.STREAM.INFO.CATALOGUE'", { cause: new errors.NoRespondersError("$JS.API.STREAM.INFO.CATALOGUE") });
  const notEnabled = () => Object.assign(new Error("jetstream is not enabled", { cause: noResponders() }), { name: "JetStreamNotEnabled" });
  // What nats.js rejects a request with when its connection closes or drops under it (muxsubscription, protocol).
  const closedUnder = () => new errors.RequestError("connection closed", { cause: new errors.RequestError("connection closed") });
  const transient: Array<[string, unknown]> = [
    ["a JetStream request timed out", new errors.TimeoutError()],
    ["no responders", noResponders()],
    ["no responders, as the error itself", new errors.NoRespondersError("$JS.API.STREAM.INFO.CATALOGUE")],
    ["jetstream not enabled (a reload)", notEnabled()],
    ["503", apiError(503, 10076, "JetStream not enabled")],
    ["10008 JetStream system temporarily unavailable (a leader election)", apiError(503, 10008, "JetStream system temporarily unavailable")],
    ["10009 JetStream cluster can not handle request (no leader yet)", apiError(500, 10009, "JetStream cluster can not handle request")],
    ["the connection closed under a request", closedUnder()],
    ["the connection dropped under a request", new errors.RequestError("connection disconnected")],
    ["a closed connection", new errors.ClosedConnectionError()],
    ["a draining connection", new errors.DrainingConnectionError()],
    ["wrapped by an adapter", new Error("catching up", { cause: new errors.TimeoutError() })],
  ];
  const faults: Array<[string, unknown]> = [
    ["a plain error", new Error("something else")],
    ["a plain error saying timeout", new Error("timeout")],
    ["a plain error saying connection closed", new Error("connection closed")],
    ["a permissions violation", new errors.RequestError("permissions violation")],
    ["stream not found", apiError(404, 10059, "stream not found")],
    ["a configuration the server refuses", apiError(400, 10058, "stream name already in use with a different configuration")],
    ["the bus refusing the credential", errors.AuthorizationError.parse("Authorization Violation")],
    ["not an error", "a string"],
  ];

  it("timeouts, no responders, JetStream unavailable for a moment (a reload, a leader election) and a connection closed or dropped under a request are transient, each with a reason; anything else is not", () => {
    for (const [what, error] of transient) {
      const condition = transientBusConditionOf(error);
      assert.ok(condition !== undefined && condition.reason.length > 0, what);
    }
    for (const [what, error] of faults) assert.equal(transientBusConditionOf(error), undefined, what);
    assert.equal(transientBusConditionOf(new errors.TimeoutError())!.kind, "timeout");
    assert.equal(transientBusConditionOf(noResponders())!.kind, "no-responders");
    assert.equal(transientBusConditionOf(apiError(503, 10008, "JetStream system temporarily unavailable"))!.kind, "jetstream-unavailable");
    assert.equal(transientBusConditionOf(closedUnder())!.kind, "connection-lost");
  });

  it("the command server answers a transient condition bus-unavailable naming it (send it again), not internal; any other error stays internal with nothing of its detail", () => {
    for (const [what, error] of transient) {
      const refusal = replyErrorOf(error);
      assert.equal(refusal.code, "bus-unavailable", what);
      assert.ok(refusal.message.includes(transientBusConditionOf(error)!.reason), `${what}: ${refusal.message}`);
    }
    for (const [what, error] of faults) assert.equal(replyErrorOf(error).code, "internal", what);
  });

  it("R76: a command that failed after its id was known answers with that id, whatever the code (internal, or a bus condition to send again)", () => {
    const internal = replyErrorOf(new CommandFailed("enrol-7", new Error("ENOSPC: no space left on device")));
    assert.equal(internal.code, "internal");
    assert.equal(internal.commandId, "enrol-7");
    const busy = replyErrorOf(new CommandFailed("enrol-8", new errors.TimeoutError()));
    assert.equal(busy.code, "bus-unavailable");
    assert.equal(busy.commandId, "enrol-8");
    assert.equal(replyErrorOf(new Error("no id known")).commandId, undefined);
  });
});
