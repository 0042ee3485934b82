/** `node --import tsx src/up/daemonMain.ts controller|host <mesh dir>`: what `mesh up` leaves running. */
import { main } from "./daemon.ts";

await main(process.argv.slice(2));
