/**
 * R68: the CLI's memory of the highest records sequence the controller vouched for (`seen`), one
 * small file beside the credential it dials with (`<credential>.seen`): on the operator's own
 * machine, so a whole-folder restore of the controller's machine does not bring it back. Sent with
 * every command; a claim past the records' end is evidence that they went back (R43). Written
 * durably (R54) only when a reply carries a higher sequence.
 */
import { existsSync, readFileSync } from "node:fs";
import { Seen } from "../contracts/verbs.ts";
import type { SeenMemory } from "../client/index.ts";
import { writeFileDurable } from "../files/index.ts";

/** The file beside `credentialFile` where its CLI keeps the highest records sequence it has seen. */
export function seenFileOf(credentialFile: string): string {
  return `${credentialFile}.seen`;
}

/**
 * The seen memory of the credential file `credentialFile` (seenFileOf). `read` gives undefined for
 * a missing, unreadable or damaged file (the next reply writes it whole); `keep` writes a higher
 * sequence durably, and says on `warn` once, never throwing, when it cannot (a read-only folder:
 * the command still runs, without this evidence).
 */
export function seenMemory(credentialFile: string, warn: (line: string) => void = () => undefined): SeenMemory {
  const path = seenFileOf(credentialFile);
  let warned = false;
  const read = (): Seen | undefined => {
    if (!existsSync(path)) return undefined;
    try {
      const parsed = Seen.safeParse(JSON.parse(readFileSync(path, "utf8")));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    read,
    keep: (seen) => {
      if (seen.sequence <= (read()?.sequence ?? -1)) return;
      try {
        writeFileDurable(path, `${JSON.stringify(seen)}\n`);
      } catch (error) {
        if (!warned) warn(`the records sequence this CLI saw is not kept in ${path} (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): it is evidence after a restore of the controller's machine (R68)`);
        warned = true;
      }
    },
  };
}
