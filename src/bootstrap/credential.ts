import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { BusCredential } from "../bus/connect.ts";

/**
 * The controller's own credential while it runs (R14): the password it dials with now, which a
 * rotation switches (every reconnect reads it), and the file it is kept in.
 *
 * A rotated password is written to `<file>.next` (0600) the moment it is minted, and moved over
 * `<file>` once the bus accepted it (the broker applied the user list carrying it). A start finds
 * the bus in either state: `candidates()` gives the file's password first, then the pending one.
 */
export type ControllerCredential = {
  /** The credential as dialled now: address, user, the current password, fingerprint. */
  current(): BusCredential;
  /** The current password (for connectToBus's `password` option: read at every reconnect). */
  password(): string;
  /** Dial with `password` from now on and keep it pending beside the file (0600). */
  stage(password: string): void;
  /** Whether a staged password waits to be committed. */
  pending(): boolean;
  /** Writes the current password into the credential file (0600, atomically) and drops the pending one. */
  commit(): void;
};

/** Path of the pending (rotated, not yet confirmed) credential beside `file`. */
export function pendingCredentialFile(file: string): string {
  return `${file}.next`;
}

function writePrivate(path: string, credential: BusCredential): void {
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, `${JSON.stringify(credential, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, path);
}

/**
 * The password of a pending credential beside `file` for the same user, or null when there is
 * none (or it cannot be read: a start then dials with the file's password alone).
 */
export function pendingPassword(file: string, user: string): string | null {
  const path = pendingCredentialFile(file);
  if (!existsSync(path)) return null;
  try {
    const parsed = BusCredential.safeParse(JSON.parse(readFileSync(path, "utf8")));
    return parsed.success && parsed.data.user === user ? parsed.data.password : null;
  } catch {
    return null;
  }
}

/**
 * A ControllerCredential starting from `initial` (the configuration's credential: the file's
 * address or MESH_BUS_URL) kept in `file`. The file keeps its own address when it is rewritten;
 * only the password changes.
 */
export function controllerCredential(initial: BusCredential, file: string): ControllerCredential {
  let password = initial.password;
  let staged = false;
  const stored = (): BusCredential => {
    try {
      const parsed = BusCredential.safeParse(JSON.parse(readFileSync(file, "utf8")));
      if (parsed.success) return { ...parsed.data, password };
    } catch {
      // rewritten from the configuration below
    }
    return { ...initial, password };
  };
  return {
    current: () => ({ ...initial, password }),
    password: () => password,
    stage(next) {
      password = next;
      staged = true;
      writePrivate(pendingCredentialFile(file), { ...initial, password: next });
    },
    pending: () => staged,
    commit() {
      writePrivate(file, stored());
      rmSync(pendingCredentialFile(file), { force: true });
      staged = false;
    },
  };
}
