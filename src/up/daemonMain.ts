/**
 * `node dist/src/up/daemonMain.js controller|host|supervisor <mesh dir> [<name>]` (from sources:
 * `node --import tsx src/up/daemonMain.ts ...`): what `mesh up` leaves running (spawnDaemon).
 */
import { main } from "./daemonProcess.ts";

await main(process.argv.slice(2), process.env);
