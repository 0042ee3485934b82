/** `node --import tsx src/up/daemonMain.ts controller|host|supervisor <mesh dir> [<name>]`: what `mesh up` leaves running. */
import { main } from "./daemon.ts";

await main(process.argv.slice(2), process.env);
