import { dirname, join } from "node:path";
import { z } from "zod";
import { readFileSync } from "node:fs";
import type { BusCredential } from "./bus/connect.ts";
import { TLS_REQUIRED, isDialableBusAddress } from "./bus/tlsOnly.ts";
import { CredentialFileError, readBusCredential } from "./files/index.ts";
import { certificateFingerprint, certificatesOf } from "./crypto/secrets.ts";

/** A SHA-256 certificate fingerprint as clients pin it: 32 bytes, `AA:BB:...`. */
const FINGERPRINT = /^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){31}$/;
import { MeshName } from "./manifest/manifest.ts";
import { formatBusAddress, parseBusAddress } from "./projections/queries.ts";

/**
 * Configuration: the ONE place that reads the environment (R35, STYLE.md 9). Each consumer (the
 * `mesh` CLI, the controller) has one zod schema and one `parse...Config(env)` returning one frozen
 * result; callers pass `process.env` (or a test's own map) in, nothing else reads it.
 */

/** Settings that cannot be used as given: names every variable involved and what to do. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly variables: readonly string[];
  /** `unset`: a required variable is not set; `invalid`: it is set to something that does not do. */
  readonly problem: "unset" | "invalid";
  constructor(variables: readonly string[], message: string, options?: { cause?: unknown; problem?: "unset" | "invalid" }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.variables = variables;
    this.problem = options?.problem ?? "invalid";
  }
}

/** The environment as given: `process.env` or a test's map. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** Where the operator's credential file is looked for when MESH_CREDENTIAL is not set. */
export const DEFAULT_CREDENTIAL_FILE = "./.mesh/operator.json";
/** How long the CLI waits for the controller's reply, in milliseconds, unless told otherwise. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 10_000;

/** A context's name (src/cli/contexts.ts): letters, digits, `.`, `_`, `@` and `-`, starting with a letter or digit. */
export const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/;

const ClientSchema = z.object({
  MESH_CREDENTIAL: z.string().min(1).default(DEFAULT_CREDENTIAL_FILE),
  MESH_TIMEOUT_MS: z.coerce.number().int().positive().max(600_000).default(DEFAULT_COMMAND_TIMEOUT_MS),
  MESH_CONTEXT: z.string().regex(CONTEXT_NAME, "a context's name, as `mesh context list` lists it").optional(),
  XDG_CONFIG_HOME: z.string().optional(),
  HOME: z.string().optional(),
});

/** The `mesh` CLI's settings. */
export type ClientConfig = Readonly<{
  /** The operator's credential file, JSON `{ address, user, seed, fingerprint }` (MESH_CREDENTIAL). */
  credentialFile: string;
  /** Milliseconds to wait for a reply (MESH_TIMEOUT_MS). */
  timeoutMs: number;
  /** Whether MESH_CREDENTIAL was set: it then wins over every context (src/cli/contexts.ts). */
  credentialSet?: boolean;
  /** The named context to use (MESH_CONTEXT), when set. */
  context?: string;
  /** The user's mesh configuration folder, `$XDG_CONFIG_HOME/mesh` or `$HOME/.config/mesh`; absent when neither is set. */
  configDir?: string;
}>;

/**
 * Reads the CLI's settings from `env`: MESH_CREDENTIAL (default ./.mesh/operator.json),
 * MESH_TIMEOUT_MS (default 10,000), MESH_CONTEXT, and where the user's configuration is
 * (XDG_CONFIG_HOME, else HOME). Empty values count as unset. Returns a frozen object.
 * Throws ConfigError naming the variable when a value is malformed.
 */
export function parseClientConfig(env: Environment): ClientConfig {
  const parsed = ClientSchema.safeParse(withoutEmpty(env, ["MESH_CREDENTIAL", "MESH_TIMEOUT_MS", "MESH_CONTEXT", "XDG_CONFIG_HOME", "HOME"]));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = String(issue?.path[0] ?? "environment");
    throw new ConfigError([variable], `${variable}: ${issue?.message ?? "invalid"}: fix or unset it`);
  }
  const { MESH_CONTEXT: context, XDG_CONFIG_HOME: xdg, HOME: home } = parsed.data;
  const configDir = xdg !== undefined ? join(xdg, "mesh") : home !== undefined ? join(home, ".config", "mesh") : undefined;
  return Object.freeze({
    credentialFile: parsed.data.MESH_CREDENTIAL, timeoutMs: parsed.data.MESH_TIMEOUT_MS, credentialSet: env.MESH_CREDENTIAL !== undefined && env.MESH_CREDENTIAL !== "",
    ...(context === undefined ? {} : { context }), ...(configDir === undefined ? {} : { configDir }),
  });
}

/**
 * How a person calls `mesh` where this one runs, for the commands it prints (issue 29): `npx mesh`
 * under npm (`npm start`, `npx mesh`: npm sets npm_command), where a clone has no `mesh` on the
 * PATH; `mesh` otherwise.
 */
export function meshInvocation(env: Environment): string {
  return env.npm_command ? "npx mesh" : "mesh";
}

/** The named variables of `env`, empty strings dropped (an empty variable means unset). */
function withoutEmpty(env: Environment, names: readonly string[]): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value !== "") picked[name] = value;
  }
  return picked;
}

// ---- the controller's settings (R19, R34, R35) ------------------------------------------------

/** The seats the controller submits work to when MESH_CONTROLLER_SUBMITS is not set (R19). */
export const DEFAULT_CONTROLLER_SUBMITS = "mesh-build";

/**
 * The controller's configuration: read once from the environment by parseControllerConfig, with
 * the files it names already read. Frozen. Never printed whole: `credential.seed` and
 * `meshKey` are secrets (R3).
 */
export type ControllerConfig = Readonly<{
  /** The genesis address (MESH_BROKER_ADDRESS) with its port filled in (R8), or null when unset. */
  brokerAddress: string | null;
  /** The bus certificate's SHA-256 fingerprint every client pins (R34), or null when none is known. */
  fingerprint: string | null;
  /** Path of the controller's credential file (MESH_CONTROLLER_CREDENTIAL), rewritten on rotation (R14). */
  credentialFile: string;
  /** What the controller dials: address (MESH_BUS_URL, else the file's), user, seed, fingerprint. */
  credential: Readonly<BusCredential>;
  /** The mesh key, base64 of 32 bytes (MESH_KEY_FILE). */
  meshKey: string;
  /** The seats the controller submits work to (MESH_CONTROLLER_SUBMITS, R19). */
  controllerSubmits: readonly string[];
  /** Replicas of every stream the controller raises (MESH_CATALOGUE_REPLICAS, default 1). */
  replicas: number;
  /**
   * The controller's own state folder (MESH_CONTROLLER_STATE_DIR; default: the credential file's
   * folder): it keeps the records' high-water mark there, outside the records (R43).
   */
  stateDir: string;
  /**
   * Milliseconds a controller's lease lasts unless renewed (MESH_CONTROLLER_LEASE_MS, R61); 0: no
   * lease (one controller on one server). Default 0 with one replica, 2,000 with more (a cluster: a
   * standby takes over within about 2.5 s of a controller's death, R77).
   */
  leaseMs: number;
}>;

/** The lease's length on a cluster unless MESH_CONTROLLER_LEASE_MS says otherwise (R61). */
export const DEFAULT_CLUSTER_LEASE_MS = 2_000;

const controllerEnvSchema = z.object({
  MESH_BROKER_ADDRESS: z.string().trim().min(1).optional(),
  MESH_BROKER_CERTIFICATE: z.string().trim().min(1).optional(),
  MESH_BROKER_FINGERPRINT: z
    .string()
    .trim()
    .regex(FINGERPRINT, "the SHA-256 fingerprint of the bus certificate, AA:BB:... (32 bytes)")
    .optional(),
  MESH_CONTROLLER_CREDENTIAL: z.string().trim().min(1, "the path of the controller's credential file"),
  MESH_BUS_URL: z.string().trim().min(1).optional(),
  MESH_KEY_FILE: z.string().trim().min(1, "the path of the mesh key file"),
  MESH_CONTROLLER_SUBMITS: z
    .string()
    .default(DEFAULT_CONTROLLER_SUBMITS)
    .transform((list) => list.split(",").map((seat) => seat.trim()).filter((seat) => seat.length > 0))
    .pipe(z.array(MeshName)),
  MESH_CATALOGUE_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  MESH_CONTROLLER_STATE_DIR: z.string().trim().min(1).optional(),
  MESH_CONTROLLER_LEASE_MS: z.coerce.number().int()
    .refine((ms) => ms === 0 || (ms >= 1_000 && ms <= 600_000), "0 (no lease) or 1000 to 600000 milliseconds")
    .optional(),
});

function readConfigFile(variable: string, path: string, what: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : (error as Error).message;
    throw new ConfigError([variable], `${variable}=${path}: cannot read ${what}: ${reason}`, { cause: error });
  }
}

/** The controller's credential file (the one reader, files/credentialFile.ts); ConfigError naming MESH_CONTROLLER_CREDENTIAL. */
function readControllerCredential(path: string): BusCredential {
  try {
    return readBusCredential(path);
  } catch (error) {
    if (!(error instanceof CredentialFileError)) throw error;
    const what = error.code === "unreadable" ? `cannot read the controller's credential: ${error.reason}` : error.code === "not-json" ? "is not JSON" : error.reason;
    throw new ConfigError(["MESH_CONTROLLER_CREDENTIAL"], `MESH_CONTROLLER_CREDENTIAL=${path}${error.code === "not-json" ? " " : ": "}${what}`, { cause: error });
  }
}

/** `tls://host:port` from an address, the port filled in (R8); null when it is not an address. */
function normalAddress(address: string): string | null {
  try {
    return formatBusAddress(parseBusAddress(address));
  } catch {
    return null;
  }
}

/**
 * Reads the controller's configuration from `env` (the caller passes process.env: this module is
 * the one place that reads it, R35) and the files it names, once. Returns a frozen
 * ControllerConfig.
 *
 * Variables: MESH_CONTROLLER_CREDENTIAL (required: the credential JSON file
 * `{address,user,seed,fingerprint?}`), MESH_KEY_FILE (required: base64 of 32 bytes),
 * MESH_BROKER_ADDRESS (the genesis address; a port-less one gets 4222, R8), MESH_BROKER_CERTIFICATE
 * (a PEM file whose SHA-256 fingerprint is pinned, or that fingerprint itself, R34) and/or MESH_BROKER_FINGERPRINT, MESH_BUS_URL
 * (what the controller dials instead of the credential's address), MESH_CONTROLLER_SUBMITS (comma
 * list of seats, R19; default "mesh-build"), MESH_CATALOGUE_REPLICAS (default 1),
 * MESH_CONTROLLER_STATE_DIR (the controller's state folder, R43; default the credential file's folder),
 * MESH_CONTROLLER_LEASE_MS (R61: how long the active controller's lease lasts unless renewed; 0 for
 * none; default 0 with one replica, 2,000 on a cluster).
 *
 * Throws ConfigError, one line naming the variables, when a value is malformed, a file is missing
 * or unreadable, or two settings state one fact differently (R35): the certificate's fingerprint
 * and MESH_BROKER_FINGERPRINT, MESH_BUS_URL and MESH_BROKER_ADDRESS, or a fingerprint and the
 * credential file's own — the message says which to unset. Never includes a secret (R3).
 */
export function parseControllerConfig(env: Environment): ControllerConfig {
  const vars = controllerVariables(env);
  const brokerAddress = brokerAddressOf(vars);
  const fingerprint = givenFingerprint(vars);
  const keyText = meshKeyOf(vars);
  const stored = readControllerCredential(vars.MESH_CONTROLLER_CREDENTIAL);
  const address = dialledAddress(vars, stored.address, brokerAddress);
  const credential = dialledCredential(vars, stored, address, fingerprint);
  return Object.freeze({
    brokerAddress,
    fingerprint: credential.fingerprint ?? null,
    credentialFile: vars.MESH_CONTROLLER_CREDENTIAL,
    credential: Object.freeze(credential),
    meshKey: keyText,
    controllerSubmits: Object.freeze([...vars.MESH_CONTROLLER_SUBMITS]),
    replicas: vars.MESH_CATALOGUE_REPLICAS,
    stateDir: vars.MESH_CONTROLLER_STATE_DIR ?? dirname(vars.MESH_CONTROLLER_CREDENTIAL),
    leaseMs: vars.MESH_CONTROLLER_LEASE_MS ?? (vars.MESH_CATALOGUE_REPLICAS > 1 ? DEFAULT_CLUSTER_LEASE_MS : 0),
  });
}

/** The controller's variables as controllerEnvSchema reads them. */
type ControllerVariables = z.output<typeof controllerEnvSchema>;

/** The controller's variables parsed by their schema (empty ones as unset); ConfigError names the first one at fault. */
function controllerVariables(env: Environment): ControllerVariables {
  const names = Object.keys(controllerEnvSchema.shape);
  const parsed = controllerEnvSchema.safeParse(withoutEmpty(env, names));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const variable = String(issue.path[0] ?? "configuration");
    const unset = issue.code === "invalid_type";
    throw new ConfigError([variable], `${variable}: ${unset ? "is not set" : issue.message}`, { problem: unset ? "unset" : "invalid" });
  }
  return parsed.data;
}

/** The genesis address (R8), a port-less one given 4222; null when MESH_BROKER_ADDRESS is unset. */
function brokerAddressOf(vars: ControllerVariables): string | null {
  if (vars.MESH_BROKER_ADDRESS === undefined) return null;
  const brokerAddress = normalAddress(vars.MESH_BROKER_ADDRESS);
  if (brokerAddress === null) {
    throw new ConfigError(["MESH_BROKER_ADDRESS"], "MESH_BROKER_ADDRESS is not host[:port] or tls://host[:port] (and carries no user or password)");
  }
  return brokerAddress;
}

/** The pinned fingerprint: from the certificate, given directly, or both agreeing (R34, R35); null when neither is set. */
function givenFingerprint(vars: ControllerVariables): string | null {
  let fingerprint: string | null = null;
  if (vars.MESH_BROKER_CERTIFICATE !== undefined && FINGERPRINT.test(vars.MESH_BROKER_CERTIFICATE)) {
    // A module's declared environment carries the fingerprint itself in MESH_BROKER_CERTIFICATE
    // (R34: "pins its SHA-256 fingerprint (from MESH_BROKER_CERTIFICATE)"); a path names the PEM.
    fingerprint = vars.MESH_BROKER_CERTIFICATE.toUpperCase();
  } else if (vars.MESH_BROKER_CERTIFICATE !== undefined) {
    const pem = readConfigFile("MESH_BROKER_CERTIFICATE", vars.MESH_BROKER_CERTIFICATE, "the bus certificate");
    try {
      // The chain's last certificate, its root: the CA (R71). A mesh made before R71 named its bus's
      // certificate, which its first push turns into the CA behind a new one (renewBusCertificate).
      fingerprint = certificateFingerprint(certificatesOf(pem).at(-1) ?? pem);
    } catch (error) {
      throw new ConfigError(["MESH_BROKER_CERTIFICATE"], `MESH_BROKER_CERTIFICATE=${vars.MESH_BROKER_CERTIFICATE} is not a PEM certificate`, { cause: error });
    }
  }
  if (vars.MESH_BROKER_FINGERPRINT === undefined) return fingerprint;
  const given = vars.MESH_BROKER_FINGERPRINT.toUpperCase();
  if (fingerprint !== null && fingerprint !== given) {
    throw new ConfigError(
      ["MESH_BROKER_CERTIFICATE", "MESH_BROKER_FINGERPRINT"],
      `MESH_BROKER_FINGERPRINT (${given}) disagrees with the fingerprint of MESH_BROKER_CERTIFICATE (${fingerprint}): unset MESH_BROKER_FINGERPRINT (the certificate file is the source) or point MESH_BROKER_CERTIFICATE at the bus's certificate`,
    );
  }
  return given;
}

/** The mesh key: MESH_KEY_FILE's text, base64 of 32 bytes. */
function meshKeyOf(vars: ControllerVariables): string {
  const keyText = readConfigFile("MESH_KEY_FILE", vars.MESH_KEY_FILE, "the mesh key").trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(keyText) || Buffer.from(keyText, "base64").length !== 32) {
    throw new ConfigError(["MESH_KEY_FILE"], `MESH_KEY_FILE=${vars.MESH_KEY_FILE} does not hold a mesh key (base64 of 32 bytes)`);
  }
  return keyText;
}

/** The address the controller dials: the credential file's, or MESH_BUS_URL (TLS, R67), which must agree with MESH_BROKER_ADDRESS (R35). */
function dialledAddress(vars: ControllerVariables, storedAddress: string, brokerAddress: string | null): string {
  if (vars.MESH_BUS_URL === undefined) return storedAddress;
  const dialled = normalAddress(vars.MESH_BUS_URL);
  if (dialled === null || !/^[a-z]+:\/\//.test(vars.MESH_BUS_URL)) {
    throw new ConfigError(["MESH_BUS_URL"], "MESH_BUS_URL is not tls://host:port (and carries no user or password)");
  }
  if (!isDialableBusAddress(dialled)) throw new ConfigError(["MESH_BUS_URL"], `MESH_BUS_URL (${dialled}): ${TLS_REQUIRED}`);
  if (brokerAddress !== null && dialled !== brokerAddress) {
    throw new ConfigError(
      ["MESH_BUS_URL", "MESH_BROKER_ADDRESS"],
      `MESH_BUS_URL (${dialled}) and MESH_BROKER_ADDRESS (${brokerAddress}) state the bus address differently: unset MESH_BUS_URL to dial the credential's address, or correct one of them`,
    );
  }
  return dialled;
}

/**
 * The credential the controller dials with: the file's user and secret at `address`, its
 * cluster's servers (R62), and the pin, the given `fingerprint` or the file's, which must agree
 * (R35); a tls:// address with no pin is refused (R34).
 */
function dialledCredential(vars: ControllerVariables, stored: BusCredential, address: string, fingerprint: string | null): BusCredential {
  if (fingerprint !== null && stored.fingerprint !== undefined && stored.fingerprint.toUpperCase() !== fingerprint) {
    const source = vars.MESH_BROKER_CERTIFICATE !== undefined ? "MESH_BROKER_CERTIFICATE" : "MESH_BROKER_FINGERPRINT";
    throw new ConfigError(
      [source, "MESH_CONTROLLER_CREDENTIAL"],
      `the fingerprint in MESH_CONTROLLER_CREDENTIAL (${stored.fingerprint.toUpperCase()}) disagrees with ${source} (${fingerprint}): remove "fingerprint" from the credential file or unset ${source}`,
    );
  }
  const pin = fingerprint ?? stored.fingerprint?.toUpperCase() ?? null;
  // The file's secret as it is: an nkey seed (R63), or a password from before nkeys.
  const credential: BusCredential = {
    address, user: stored.user,
    ...(stored.seed !== undefined ? { seed: stored.seed } : {}), ...(stored.password !== undefined ? { password: stored.password } : {}),
  };
  // A cluster's servers (R62) are dialled as the file lists them, unless MESH_BUS_URL names one.
  if (stored.addresses !== undefined && vars.MESH_BUS_URL === undefined) credential.addresses = [...stored.addresses];
  if (pin !== null) credential.fingerprint = pin;
  if (address.startsWith("tls://") && pin === null) {
    throw new ConfigError(
      ["MESH_BROKER_CERTIFICATE", "MESH_BROKER_FINGERPRINT"],
      `the controller dials ${address} but no certificate fingerprint is known to pin (R34): set MESH_BROKER_CERTIFICATE (or MESH_BROKER_FINGERPRINT)`,
    );
  }
  return credential;
}
