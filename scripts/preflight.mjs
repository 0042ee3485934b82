// `npm start` and `npm test` check what they need first (prestart, pretest), so a fresh machine
// gets one line saying what is missing and the command that fixes it, not a failure further on:
// nats-server (installed through apt when we run as root with apt-get, said in a line; else the
// command to run), and for `npm test` the dev dependencies. Plain JavaScript: nothing else is
// needed to run it. Usage: node scripts/preflight.mjs start|test
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";

const script = process.argv[2];
if (script !== "start" && script !== "test") {
  console.error("usage: node scripts/preflight.mjs start|test");
  process.exit(2);
}
const has = (command) => spawnSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" }).status === 0;

if (script === "test") {
  const require = createRequire(import.meta.url);
  const missing = ["typescript", "eslint", "tsx", "tinyglobby"].filter((name) => {
    try { require.resolve(`${name}/package.json`); return false; } catch { return true; }
  });
  if (missing.length > 0) {
    console.error(`npm test: the dev dependencies are not installed (${missing.join(", ")} missing: installed with --omit=dev?); run \`npm ci\`, then \`npm test\``);
    process.exit(1);
  }
}

if (!has("nats-server")) {
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (root && has("apt-get")) {
    console.error(`npm ${script}: nats-server is not installed: installing Debian's package (apt-get install -y nats-server)`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    const steps = [["update", "-qq"], ["install", "-y", "-qq", "nats-server"]];
    for (const args of steps) {
      const run = spawnSync("apt-get", args, { stdio: "inherit", env });
      if (run.status !== 0) {
        console.error(`npm ${script}: \`apt-get ${args.join(" ")}\` failed (exit ${run.status}); install nats-server, then run \`npm ${script}\` again`);
        process.exit(1);
      }
    }
  } else {
    const command = has("apt-get") ? "sudo apt-get install -y nats-server" : "install nats-server (https://docs.nats.io/running-a-nats-service/introduction/installation)";
    console.error(`npm ${script}: nats-server is not installed: run \`${command}\`, then \`npm ${script}\` again`);
    process.exit(1);
  }
}
