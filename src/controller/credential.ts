import { existsSync } from "node:fs";
import { secretOf, withSecret, type BusCredential } from "../bus/connect.ts";
import { readBusCredential, removeFileDurable, writeBusCredential } from "../files/index.ts";

/**
 * The controller's own credential while it runs (R14, R50): the secret it dials with now (its nkey
 * seed, R63; the functions below say password, the name it had before nkeys), which a rotation
 * switches (every reconnect reads it), and the file it is kept in.
 *
 * Every change of the controller's key takes one path (whatever decided it: the first push
 * off the genesis key, `mesh credential rotate controller`, a node removal that ended a
 * copy of it, R48, or a restore's fresh credentials): the records hold the new secret; the push
 * that composes the user list carrying it first `stage`s it here (push.ts adoptControllerCredential),
 * before that list is sent; once the broker reports the list applied, `commit` writes it into the
 * file. A staged seed is written to `<file>.next` (0600) at once, so a start finds the bus in
 * either state: it dials with the file's seed, then the pending one (main.ts connect). While a
 * seed is staged, reconnects alternate between it and the one before (`dialPassword`): the bus
 * may or may not have reloaded the new list yet, and the controller must reach it either way.
 */
export type ControllerCredential = {
  /** The credential as dialled now: address, user, the current seed, fingerprint. */
  current(): BusCredential;
  /** The current secret (seed): the staged one while a rotation is pending. */
  password(): string;
  /**
   * The secret to present at the next (re)connect (connectToBus's `secret` option): the current
   * one; while a rotation is pending, the staged and the previous one in turn, staged first.
   */
  dialPassword(): string;
  /** Dial with the secret `password` (a seed) from now on and keep it pending beside the file (0600). */
  stage(password: string): void;
  /** Whether a staged seed waits to be committed. */
  pending(): boolean;
  /** Writes the current seed into the credential file (0600, atomically and durably, R54) and drops the pending one. */
  commit(): void;
};

/** Path of the pending (rotated, not yet confirmed) credential beside `file`. */
export function pendingCredentialFile(file: string): string {
  return `${file}.next`;
}

/**
 * The secret (seed) of a pending credential beside `file` for the same user, or null when there is
 * none (or it cannot be read: a start then dials with the file's seed alone).
 */
export function pendingPassword(file: string, user: string): string | null {
  const path = pendingCredentialFile(file);
  if (!existsSync(path)) return null;
  try {
    const pending = readBusCredential(path);
    return pending.user === user ? secretOf(pending) : null;
  } catch {
    return null;
  }
}

/**
 * A ControllerCredential starting from `initial` (the configuration's credential: the file's
 * address or MESH_BUS_URL) kept in `file`. The file keeps its own address when it is rewritten;
 * only the secret changes.
 */
export function controllerCredential(initial: BusCredential, file: string): ControllerCredential {
  let password = secretOf(initial);
  let staged = false;
  let previous: string | null = null;
  let attempts = 0;
  const stored = (): BusCredential => {
    try {
      return withSecret(readBusCredential(file), password);
    } catch {
      // rewritten from the configuration below
    }
    return withSecret(initial, password);
  };
  return {
    current: () => withSecret(initial, password),
    password: () => password,
    dialPassword() {
      if (staged) {
        if (previous === null || previous === password) return password;
        attempts += 1;
        return attempts % 2 === 1 ? password : previous;
      }
      // R61: a standby shares this credential with the active controller, which rotates it (R14,
      // R50) and drops the standby's connection at the reload: the file's committed seed is
      // adopted, and one pending beside it (staged by the active one, about to be installed) is
      // tried in turn, first.
      try {
        const committed = secretOf(readBusCredential(file));
        if (committed !== password && readBusCredential(file).user === initial.user) password = committed;
      } catch {
        // no readable file: the password in memory
      }
      const next = pendingPassword(file, initial.user);
      if (next === null || next === password) return password;
      attempts += 1;
      return attempts % 2 === 1 ? next : password;
    },
    stage(next) {
      if (!staged) previous = password;
      password = next;
      staged = true;
      attempts = 0;
      writeBusCredential(pendingCredentialFile(file), withSecret(initial, next));
    },
    pending: () => staged,
    commit() {
      writeBusCredential(file, stored());
      removeFileDurable(pendingCredentialFile(file));
      staged = false;
      previous = null;
    },
  };
}
