import { existsSync, lstatSync, readFileSync, readdirSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import { isSeedSecret, openAsNode } from "../crypto/secrets.ts";
import { credentialAddresses } from "../bus/connect.ts";
import { TLS_REQUIRED, isDialableBusAddress } from "../bus/tlsOnly.ts";
import { NAME_PATTERN } from "../names.ts";
import { Declaration } from "../contracts/declaration.ts";
import type { HostReport } from "../contracts/report.ts";
import { CERTIFICATE_FILE_VARIABLE, LOGINS_FILE_VARIABLE, PASSWORD_VARIABLE, PROVISIONS_FILE_VARIABLE, SEED_VARIABLE } from "../compose/environment.ts";
import { DeclarationRefused } from "./refused.ts";
import { finishInterrupted, stageTree, UnsafeTreePath, type TreeFile } from "../files/index.ts";
import { EnvFileError, envFileText } from "../files/envFile.ts";

export { DeclarationRefused } from "./refused.ts";

/**
 * Applying a declaration to a node's state folder (DESIGN.md section 7, R29, R69).
 *
 * The resources a declaration names become files under the state folder (see desiredFiles):
 * `modules/<module>/...` for each module it is to hold and `provisions/...` for the logins its
 * providers grant, every secret opened with the node's private key and kept 0600.
 *
 * What the mesh wrote is listed in `owned.json`; a file under the folder that is not listed there
 * was found, and is kept (R29). Applying a declaration removes the owned files it no longer names,
 * and then the folders they leave empty. It is all or nothing (R69, stagedTree.ts): every file is
 * bounded and staged apart first, with `owned.json` and `last-applied.json`, and the whole moves in
 * at one commit (files/stagedTree.ts); nothing is written or removed through a link.
 */

/** Runs `step`, an UnsafeTreePath it throws told as the declaration's refusal (same code: nothing changed). */
function refusing<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (error instanceof UnsafeTreePath) throw new DeclarationRefused(error.code, error.message, { cause: error });
    throw error;
  }
}

export const OWNED_FILE = "owned.json";
const MESH_FOLDERS = ["modules", "provisions"] as const;

/**
 * What the host remembers about the mesh's files: the last applied digest and the paths it wrote,
 * and the records' sequence that declaration was composed from (when it named one), which the host
 * reports again when it starts (R43).
 */
export type Owned = { node: string; digest: string; files: string[]; userList?: string; recordsSequence?: number; recordsTag?: string };

/**
 * R69: the largest file a declaration may make (a module's `module.json`, `env`, provisions), in
 * bytes. The largest the mesh composes is a few KiB; a 921 KB `module.json` was written once.
 */
export const MAX_OWNED_FILE_BYTES = 256 * 1024;
/** R69: the most bytes all the files of one declaration may come to (some 2,500 modules' worth). */
export const MAX_OWNED_TOTAL_BYTES = 16 * 1024 * 1024;
/** R69: the most files one declaration may make (four or five a module, one a granted provision). */
export const MAX_OWNED_FILES = 8_192;

/** What one application changed, as paths relative to the state folder, sorted. */
export type Applied = {
  digest: string;
  /** Files written because they were new or their content changed. */
  written: string[];
  /** Files the mesh owned that the declaration no longer names, now deleted. */
  removed: string[];
  /** Files found under the mesh's folders that the mesh never wrote, left in place (R29). */
  kept: string[];
  /** Every file the mesh owns after this declaration. */
  owned: string[];
};

type Desired = Map<string, TreeFile>;

/** The name of the mesh CA's PEM file in each module's folder, what its client verifies the bus against (R57, R71). */
export const CERTIFICATE_FILE = "certificate.pem";

/**
 * What the host knows that the declaration does not carry: the state folder (absolute, so a
 * module's env can name its files) and the bus certificate as PEM, pinned at connect (R57).
 */
export type LocalFacts = { stateDir?: string; certificatePem?: string };

/** The last declaration whose files were applied, its report and the certificate PEM used (R55). */
export const LAST_APPLIED_FILE = "last-applied.json";

/**
 * What the host keeps of its last applied declaration (R55): the declaration as received (its
 * secrets still sealed to the node's key), the report published about it, and the bus certificate
 * PEM its files were written with, so a check at start, before any connection, writes the same files.
 */
export type LastApplied = { declaration: Declaration; report: HostReport; certificatePem?: string };

/** The text of `<stateDir>/last-applied.json` (0600), committed with the files it names (R55, R69). */
function lastAppliedFile(last: LastApplied): TreeFile {
  return { text: `${JSON.stringify(last)}\n`, mode: 0o600 };
}

/** Reads `<stateDir>/last-applied.json`, or null when there is none or it does not parse. */
export function readLastApplied(stateDir: string): LastApplied | null {
  const file = join(stateDir, LAST_APPLIED_FILE);
  if (!existsSync(file)) return null;
  try {
    const raw = JSON.parse(readFileSync(file, "utf8")) as { declaration?: unknown; report?: HostReport; certificatePem?: string };
    const declaration = Declaration.safeParse(raw.declaration);
    if (!declaration.success || typeof raw.report?.digest !== "string") return null;
    return { declaration: declaration.data, report: raw.report, ...(typeof raw.certificatePem === "string" ? { certificatePem: raw.certificatePem } : {}) };
  } catch {
    return null;
  }
}

/**
 * R55: applies the last applied declaration again and says what had drifted: the files it owns
 * that were missing or changed (written back) and owned files it no longer names (removed).
 * Null when the host never applied one. Throws DeclarationRefused or a file system error, as
 * applyDeclaration does.
 */
export function recheckOwned(stateDir: string, privateKey: string, certificatePem?: string): { last: LastApplied; drift: string[] } | null {
  finishApply(stateDir);
  const last = readLastApplied(stateDir);
  if (!last) return null;
  const pem = certificatePem ?? last.certificatePem;
  const applied = applyDeclaration(stateDir, last.declaration, privateKey, pem);
  return { last, drift: [...new Set([...applied.written, ...applied.removed])].sort() };
}

/** Reads `<stateDir>/owned.json`, or an empty record when the host never applied anything. */
export function readOwned(stateDir: string): Owned | null {
  const file = join(stateDir, OWNED_FILE);
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, "utf8")) as Owned;
}

function safeName(kind: string, name: string): string {
  if (!NAME_PATTERN.test(name) && !/^[a-z0-9][a-z0-9._-]{0,126}$/i.test(name)) {
    throw new DeclarationRefused("unsafe-name", `the declaration names ${kind} "${name.slice(0, 80)}", which is not a safe file name`);
  }
  if (name.includes("..")) throw new DeclarationRefused("unsafe-name", `the declaration names ${kind} "${name.slice(0, 80)}", which is not a safe file name`);
  return name;
}

function open(privateKey: string, sealed: string, what: string): string {
  try {
    return openAsNode(privateKey, sealed);
  } catch (error) {
    throw new DeclarationRefused("sealed-elsewhere", `the secret of ${what} does not open with this node's key (sealed to another key?)`, { cause: error });
  }
}

/** The module's env file (src/files/envFile.ts); a variable no env file carries refuses the declaration. */
function envText(env: Record<string, string>, module: string): string {
  try {
    return envFileText(env);
  } catch (error) {
    if (error instanceof EnvFileError) throw new DeclarationRefused("unsafe-name", `module "${module}": ${error.message}`, { cause: error });
    throw error;
  }
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * The files a declaration names, path (relative, `/`-separated) → content and mode:
 * - `modules/<module>/module.json` (module, version, run and any further public field);
 * - `modules/<module>/credential.json` (0600): `{address, user, seed, fingerprint?}`, the form
 *   connectToBus reads (a `tls://` address alone, R67; an empty fingerprint is left out;
 *   `password` for a credential minted before nkeys);
 * - `modules/<module>/env` (0600): the declared environment plus `MESH_NKEY_SEED` (or
 *   `MESH_PASSWORD`, before nkeys), and
 *   `MESH_BROKER_CERTIFICATE_FILE` naming the next file when the host knows the PEM, `KEY='value'`
 *   lines that sh, systemd and `node --env-file` read alike (envFileText);
 * - `modules/<module>/certificate.pem` (0644): the bus certificate the host pinned, for clients
 *   that verify against a file (R57), when `local.certificatePem` is given;
 * - `modules/<module>/provisions.json` (0600): `[{seat, provision, user, secret}]` it receives,
 *   named by `MESH_PROVISIONS_FILE` in its env (R75);
 * - `modules/<module>/logins.json` (0600): `[{seat, provision, consumer, user, secret}]`, the
 *   logins a provider must create (its entry's `logins`, each secret from the declaration's grant),
 *   named by `MESH_LOGINS_FILE` (R75: in its own folder);
 * - `provisions/<seat>/<provision>/<consumer>.json` (0600): `{seat, provision, consumer, user,
 *   secret}`, a grant no module here is told as a login (a controller from before R75).
 * Opens every secret with `privateKey`; throws DeclarationRefused when one does not open, a name
 * is not a safe file name, or a module's credential is not one a mesh client may dial (R67).
 */
export function desiredFiles(declaration: Declaration, privateKey: string, local: LocalFacts = {}): Desired {
  const files: Desired = new Map();
  // R75: grants a provider on this node is told as its logins go to its folder, and nowhere else.
  const grantOf = new Map(declaration.provisions.map((g) => [grantKey(g), g]));
  const toldAsLogins = new Set<string>();
  for (const entry of declaration.modules) {
    const module = safeName("module", entry.module);
    const base = `modules/${module}`;
    const { credential, env, provisions, logins, ...rest } = entry;
    files.set(`${base}/module.json`, { text: json(rest), mode: 0o644 });
    let password: string | undefined;
    if (credential) {
      const { sealed, fingerprint, ...visible } = credential;
      password = open(privateKey, sealed, `module "${module}"'s credential`);
      // The secret is the module's nkey seed (R63), or a password from a controller before nkeys.
      const secret = isSeedSecret(password) ? { seed: password } : { password };
      const written = { ...visible, ...secret, ...(fingerprint ? { fingerprint } : {}) };
      // The module dials with this file: never a non-TLS address (R67).
      const plain = credentialAddresses(credential).find((address) => !isDialableBusAddress(address));
      if (plain !== undefined) throw new DeclarationRefused("not-tls", `module "${module}"'s credential names ${plain}: ${TLS_REQUIRED}`);
      files.set(`${base}/credential.json`, { text: json(written), mode: 0o600 });
    }
    const added: Record<string, string> = {};
    if (password !== undefined) added[isSeedSecret(password) ? SEED_VARIABLE : PASSWORD_VARIABLE] = password;
    if (local.certificatePem !== undefined && local.stateDir !== undefined) {
      files.set(`${base}/${CERTIFICATE_FILE}`, { text: local.certificatePem, mode: 0o644 });
      added[CERTIFICATE_FILE_VARIABLE] = join(local.stateDir, base, CERTIFICATE_FILE);
    }
    const inFolder = (file: string) => join(local.stateDir ?? "", base, file);
    if (provisions.length > 0 && local.stateDir !== undefined) added[PROVISIONS_FILE_VARIABLE] = inFolder("provisions.json");
    if (logins !== undefined && logins.length > 0) {
      const opened = logins.map((login) => {
        const grant = grantOf.get(grantKey(login));
        if (grant === undefined) throw new DeclarationRefused("login-without-grant", `module "${module}" is told to create the login ${login.user} for "${login.consumer}", but the declaration grants no such provision`);
        toldAsLogins.add(grantKey(login));
        return { ...login, secret: open(privateKey, grant.sealed, `the provision ${login.provision} of ${login.seat} for "${login.consumer}"`) };
      });
      files.set(`${base}/logins.json`, { text: json(opened), mode: 0o600 });
      if (local.stateDir !== undefined) added[LOGINS_FILE_VARIABLE] = inFolder("logins.json");
    }
    if (env || Object.keys(added).length > 0) {
      files.set(`${base}/env`, { text: envText({ ...(env ?? {}), ...added }, module), mode: 0o600 });
    }
    if (provisions.length > 0) {
      const opened = provisions.map(({ sealed, ...visible }) => ({
        ...visible,
        secret: open(privateKey, sealed, `the provision ${visible.provision} of ${visible.seat} for "${module}"`),
      }));
      files.set(`${base}/provisions.json`, { text: json(opened), mode: 0o600 });
    }
  }
  for (const grant of declaration.provisions) {
    if (toldAsLogins.has(grantKey(grant))) continue;
    const { sealed, ...visible } = grant;
    const file = `provisions/${safeName("seat", grant.seat)}/${safeName("provision", grant.provision)}/${safeName("consumer", grant.consumer)}.json`;
    const secret = open(privateKey, sealed, `the provision ${grant.provision} of ${grant.seat} for "${grant.consumer}"`);
    files.set(file, { text: json({ ...visible, secret }), mode: 0o600 });
  }
  return files;
}

/** A grant's or a login's key: seat, provision and consumer (names hold no `/`). */
function grantKey(g: { seat: string; provision: string; consumer: string }): string {
  return `${g.seat}/${g.provision}/${g.consumer}`;
}

/** The files found under `folder` (links listed, never followed). */
function filesUnder(root: string, folder: string): string[] {
  const start = join(root, folder);
  if (!existsSync(start) || !lstatSync(start).isDirectory()) return [];
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else out.push(relative(root, path).split(sep).join("/"));
    }
  };
  walk(start);
  return out;
}

/**
 * R69: finishes an apply a crash interrupted after its commit, or drops one interrupted before
 * (stagedTree.ts finishInterrupted), and removes what a killed write left. Done at start and
 * before each apply and re-check. Throws DeclarationRefused when a link stands on the way.
 */
export function finishApply(stateDir: string): void {
  refusing(() => finishInterrupted(stateDir, () => [OWNED_FILE, LAST_APPLIED_FILE, ...(readOwned(stateDir)?.files ?? [])]));
}

/**
 * R69: why `desired` is over its bounds (a file over MAX_OWNED_FILE_BYTES, more than
 * MAX_OWNED_FILES files, all over MAX_OWNED_TOTAL_BYTES), or undefined. Pure.
 */
export function boundsProblem(desired: ReadonlyMap<string, TreeFile>): string | undefined {
  if (desired.size > MAX_OWNED_FILES) return `the declaration makes ${desired.size} files; a node holds at most ${MAX_OWNED_FILES} (MAX_OWNED_FILES): spread its modules over more nodes`;
  let total = 0;
  for (const [file, { text }] of desired) {
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_OWNED_FILE_BYTES) return `${file} would be ${bytes} bytes; a file is at most ${MAX_OWNED_FILE_BYTES} (MAX_OWNED_FILE_BYTES): shorten the module's manifest or environment`;
    total += bytes;
  }
  if (total > MAX_OWNED_TOTAL_BYTES) return `the declaration's files come to ${total} bytes; at most ${MAX_OWNED_TOTAL_BYTES} (MAX_OWNED_TOTAL_BYTES): spread its modules over more nodes`;
  return undefined;
}

/** A declaration's files staged (stageDeclaration): commit them, or discard them. */
export type StagedDeclaration = {
  /**
   * Commits the staged files with `owned.json` and, when `last` is given, `last-applied.json`
   * (what the re-checks apply again, R55), removing the owned files the declaration no longer
   * names. Returns what changed. Throws a file system error (after the journal is written, the
   * next apply or start finishes it).
   */
  commit(last?: LastApplied): Applied;
  /** Removes what was staged when it was not committed. Idempotent. */
  discard(): void;
};

/**
 * Stages `declaration` for `stateDir` (R29, R69): first finishes (or drops) an apply a crash
 * interrupted; opens its secrets with `privateKey`, bounds its files, inspects every path it
 * writes or removes, and writes the files that are new or changed apart. Nothing the host holds
 * changes until commit. Throws DeclarationRefused (a secret, a name, a bound, a link, a taken
 * path) or a file system error, with nothing changed.
 */
export function stageDeclaration(stateDir: string, declaration: Declaration, privateKey: string, certificatePem?: string): StagedDeclaration {
  finishApply(stateDir);
  const desired = desiredFiles(declaration, privateKey, { stateDir: resolve(stateDir), ...(certificatePem === undefined ? {} : { certificatePem }) });
  const tooLarge = boundsProblem(desired);
  if (tooLarge) throw new DeclarationRefused("too-large", tooLarge);
  const previous = readOwned(stateDir);
  const nowOwned = [...desired.keys()].sort();
  const record: Owned = {
    node: declaration.node, digest: declaration.digest, files: nowOwned,
    ...(declaration.recordsSequence === undefined ? {} : { recordsSequence: declaration.recordsSequence }),
    ...(declaration.recordsTag === undefined ? {} : { recordsTag: declaration.recordsTag }),
  };
  const staged = refusing(() => stageTree(stateDir, desired, (previous?.files ?? []).filter((file) => !desired.has(file))));
  return {
    commit(last) {
      refusing(() => staged.commit(new Map([
        [OWNED_FILE, { text: `${JSON.stringify(record, null, 2)}\n`, mode: 0o600 }],
        ...(last ? [[LAST_APPLIED_FILE, lastAppliedFile(last)] as const] : []),
      ])));
      const kept = MESH_FOLDERS.flatMap((folder) => filesUnder(stateDir, folder)).filter((file) => !desired.has(file)).sort();
      return { digest: declaration.digest, written: [...staged.write], removed: [...staged.remove], kept, owned: nowOwned };
    },
    discard: () => staged.discard(),
  };
}

/**
 * Applies `declaration` to `stateDir` all or nothing (R29, R69): stageDeclaration, then commit
 * (with `last-applied.json` when `last` is given). Files the host found are kept. Idempotent: the
 * same declaration again writes nothing. Throws as stageDeclaration and commit do.
 */
export function applyDeclaration(stateDir: string, declaration: Declaration, privateKey: string, certificatePem?: string, last?: LastApplied): Applied {
  const staged = stageDeclaration(stateDir, declaration, privateKey, certificatePem);
  try {
    return staged.commit(last);
  } finally {
    staged.discard();
  }
}
