import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CLIENT_TLS_TIMEOUT_SECONDS, busLogFile, clientTlsLines, clusterServerConfigs, renderServerConfig } from "../../installer/serverConfig.ts";
import { BUS_LOG_SIZE_LIMIT, busLogFileOf } from "../../src/host/busLog.ts";
import { hostDialOptions } from "../../src/host/agent.ts";

/**
 * The bus's configuration as the installer and `mesh up` write it (installer/serverConfig.ts), for
 * what a reconnect storm needs: after a bus restart every agent's TLS handshake arrives at once,
 * and on a busy machine they all progress together, slowly. A handshake given up half done is work
 * thrown away and is tried again: with 5 s on both ends, 2,000 agents in the fleet bench's storm
 * never came back (29 of 2,000 after two minutes, the machine loaded); with 30 s all did.
 */
describe("the bus configuration for a fleet", () => {
  const options = {
    listenHost: "0.0.0.0", port: 4222, monitorPort: 8222, certFile: "/mesh/bus-cert.pem", keyFile: "/mesh/bus-key.pem",
    storeDir: "/mesh/store", userListFile: "users.conf", logFile: "/mesh/logs/bus.log",
  };

  it("R34: the client port presents the mesh's certificate and gives a TLS handshake CLIENT_TLS_TIMEOUT_SECONDS (30)", () => {
    assert.equal(CLIENT_TLS_TIMEOUT_SECONDS, 30);
    const text = renderServerConfig(options);
    const block = clientTlsLines(options.certFile, options.keyFile).join("\n");
    assert.ok(text.includes(block), text);
    assert.match(block, /cert_file: "\/mesh\/bus-cert\.pem"/);
    assert.match(block, /key_file: "\/mesh\/bus-key\.pem"/);
    assert.match(block, /\n {2}timeout: 30\n/);
    // The authorization timeout is the server's default over TLS: the TLS timeout plus one second.
    assert.doesNotMatch(text, /auth_timeout|authorization\s*\{/);
  });

  it("a host agent waits for a dial at least as long as the bus waits for its handshake (a storm's half-done handshake is not thrown away)", () => {
    const dial = hostDialOptions("n1", () => "secret");
    assert.ok((dial.timeoutMs ?? 0) >= CLIENT_TLS_TIMEOUT_SECONDS * 1000, `${dial.timeoutMs} ms`);
    assert.equal(hostDialOptions("n1", () => "secret", 2_000).timeoutMs, 2_000, "a caller's own bound wins");
  });
});

describe("the bus configuration bounds the bus's log (R70)", () => {
  const options = {
    listenHost: "0.0.0.0", port: 4222, monitorPort: 8222, certFile: "/mesh/bus-cert.pem", keyFile: "/mesh/bus-key.pem",
    storeDir: "/mesh/store", userListFile: "users.conf", logFile: "/mesh/logs/bus.log",
  };

  it("R70: the server logs to its own file, rotated at BUS_LOG_SIZE_LIMIT; the agent reads that file back from the configuration", () => {
    const text = renderServerConfig(options);
    assert.match(text, /^log_file: "\/mesh\/logs\/bus\.log"$/m);
    assert.match(text, new RegExp(`^logfile_size_limit: ${BUS_LOG_SIZE_LIMIT}$`, "m"));
    assert.ok(BUS_LOG_SIZE_LIMIT > 0 && BUS_LOG_SIZE_LIMIT <= 64 * 1024 * 1024, "a limit small beside the store's disk");
    assert.equal(busLogFileOf(text), "/mesh/logs/bus.log");
    assert.match(renderServerConfig({ ...options, logSizeLimit: 65_536 }), /^logfile_size_limit: 65536$/m);
  });

  it("R70: every server of a cluster logs to its own bounded file in the mesh's logs folder, where mesh up and status read it", () => {
    const configs = clusterServerConfigs({
      size: 3, root: "/mesh", listenHost: "127.0.0.1", clientPorts: [1, 2, 3], routePorts: [4, 5, 6], monitorPorts: [0, 0, 0],
      certFile: "/mesh/bus-cert.pem", keyFile: "/mesh/bus-key.pem",
    });
    assert.deepEqual(configs.map((c) => c.logFile), ["/mesh/logs/bus-1.log", "/mesh/logs/bus-2.log", "/mesh/logs/bus-3.log"]);
    assert.deepEqual(configs.map((_, i) => busLogFile("/mesh", i)), configs.map((c) => c.logFile));
    assert.equal(busLogFile("/mesh"), "/mesh/logs/bus.log", "one server");
    for (const config of configs) assert.equal(busLogFileOf(renderServerConfig(config)), config.logFile);
  });
});
