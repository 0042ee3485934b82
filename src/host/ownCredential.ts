import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { isSeed, secretOf, type BusCredential } from "../bus/connect.ts";
import type { NodeSelf } from "../contracts/declaration.ts";
import { publicKeyOfSeed } from "../crypto/secrets.ts";
import { removeFileDurable, writeBusCredential, writeFileDurable } from "../files/index.ts";
import { NODE_NKEY_FILE, NODE_PENDING_SEED_FILE, NODE_SEED_FILE, promotePendingSeed, readCredentialFile, readNodeSeeds } from "./keys.ts";
import { presentedSeed, seedAfterRefusal } from "./plan.ts";

/**
 * The host agent's own credential (R50, R64): what it dials with (the given credential, or the file
 * a declaration's `self` was saved to), which seed each (re)connect presents while a rotation is
 * under way, and taking the declaration's own credential, which can be undone when the rest of the
 * declaration fails (R69: a failed declaration changes nothing in its credential).
 */

/** A declaration's own credential, checked and ready to save (planAdoption). */
export type Adoption = { next: BusCredential; promote: boolean; self: NodeSelf };

/** The node's own credential, as a host agent keeps it. */
export type OwnCredential = {
  /** The credential to dial with now. */
  current(): BusCredential;
  /** The secret the next (re)connect presents (the current seed, or the pending one after a refusal). */
  password(): string;
  /** The bus refused what was presented: while a seed is pending, present the other one next. */
  refused(): void;
  /**
   * What taking `self` means (R64), checked and not yet done: when it names the pending seed's key,
   * that seed becomes current; else only a changed user or pin is saved; null when nothing
   * changes. The address stays the host's own (the records' address is where the mesh says the
   * node reaches the bus, which this host may reach otherwise). Throws when it names a key this
   * node holds neither as its seed nor as a pending one.
   */
  planAdoption(self: NodeSelf): Adoption | null;
  /** Saves the adoption (credential file, pending seed promoted) and returns how to undo it. */
  adopt(adoption: Adoption): () => void;
};

/** The contents of `paths` now, and a function writing them back (or removing those absent), each durably (R54). */
function snapshot(paths: readonly string[]): () => void {
  const kept = paths.map((path) => (existsSync(path) ? { path, text: readFileSync(path, "utf8"), mode: statSync(path).mode & 0o777 } : { path }));
  return () => {
    for (const file of kept) {
      if (file.text === undefined) removeFileDurable(file.path);
      else writeFileDurable(file.path, file.text, { mode: file.mode });
    }
  };
}

/**
 * The own credential of the node whose state folder is `stateDir`: `given` until a declaration's
 * own credential was saved to `credentialFile`, then that file (read at every attempt, the last
 * one kept should the file vanish). `log` hears one line per adoption, never a seed (R3).
 */
export function ownCredential(stateDir: string, node: string, given: () => BusCredential, credentialFile: string, log: (line: string) => void): OwnCredential {
  let adopted: BusCredential | undefined;
  let lastPassword: string | undefined;
  let preferPending = false;
  let presentedPending = false;
  const current = (): BusCredential => {
    if (!adopted) return given();
    try {
      return readCredentialFile(credentialFile, stateDir);
    } catch {
      return adopted;
    }
  };
  return {
    current,
    password() {
      try {
        lastPassword = secretOf(current());
      } catch (error) {
        if (lastPassword === undefined) throw error;
      }
      // A rotation under way (R50, R64): the bus may hold either key; the current seed first, the
      // other once the bus refuses it; the declaration naming the new key ends it (adopt).
      let pending: string | undefined;
      try {
        pending = readNodeSeeds(stateDir).pending;
      } catch {
        pending = undefined;
      }
      const presented = presentedSeed(lastPassword!, pending, preferPending);
      preferPending = presented.preferPending;
      presentedPending = presented.isPending;
      return presented.seed;
    },
    refused() { preferPending = seedAfterRefusal(presentedPending); },
    planAdoption(self) {
      const now = current();
      const currentSeed = secretOf(now);
      const holds = (seed: string | undefined) => seed !== undefined && isSeed(seed) && publicKeyOfSeed(seed) === self.nkey;
      let seed = currentSeed;
      let promote = false;
      if (!holds(currentSeed)) {
        const { pending } = readNodeSeeds(stateDir);
        if (!holds(pending)) {
          throw new Error(`the mesh names nkey ${self.nkey} for node ${node}, which this host holds neither as its seed nor as a pending one (\`mesh host rotate-key\` makes the pending one)`);
        }
        seed = pending!;
        promote = true;
      }
      const fingerprint = self.fingerprint || now.fingerprint;
      if (!promote && now.user === self.user && (now.fingerprint ?? "") === (fingerprint ?? "")) return null;
      // The file's own addresses stay (a cluster's servers, R62); only user, seed and pin change.
      const next: BusCredential = {
        address: now.address, ...(now.addresses ? { addresses: now.addresses } : {}), user: self.user, seed, ...(fingerprint ? { fingerprint } : {}),
      };
      return { next, promote, self };
    },
    adopt({ next, promote, self }) {
      const before = adopted;
      const restore = snapshot([credentialFile, ...[NODE_SEED_FILE, NODE_NKEY_FILE, NODE_PENDING_SEED_FILE].map((name) => join(stateDir, name))]);
      writeBusCredential(credentialFile, next);
      adopted = next;
      if (promote) promotePendingSeed(stateDir, credentialFile);
      log(`host ${node}: ${promote ? `took its rotated key ${self.nkey}` : "saved its credential"} for ${next.user} to ${credentialFile}`);
      return () => {
        restore();
        adopted = before;
        log(`host ${node}: the declaration failed: its credential is back as it was in ${credentialFile}`);
      };
    },
  };
}
