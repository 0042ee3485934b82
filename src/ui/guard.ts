/**
 * What `mesh ui` lets out and in (issue 30), pure: the random token every request must carry (a
 * query parameter once, then a cookie the server sets), and the filter every JSON it sends goes
 * through, so no seed, sealed blob, password or secret reaches a browser (R3).
 */
import { randomBytes, timingSafeEqual } from "node:crypto";

/** The cookie the server sets once a request carried the token in its query. */
export const TOKEN_COOKIE = "mesh_ui_token";

/** Field names whose values are never sent, at any depth: secrets and what seals them. */
export const SECRET_FIELDS: ReadonlySet<string> = new Set(["seed", "sealed", "secret", "password", "privateKey", "operatorSecret"]);

/** A fresh random token: 32 bytes, URL-safe base64 (43 characters). */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

/** Whether `given` is `token`, compared in constant time. */
export function sameToken(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token a request carries: its `token` query parameter, else its TOKEN_COOKIE cookie; undefined when neither. */
export function tokenOf(url: URL, cookieHeader: string | undefined): { token: string; from: "query" | "cookie" } | undefined {
  const query = url.searchParams.get("token");
  if (query !== null) return { token: query, from: "query" };
  for (const part of (cookieHeader ?? "").split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === TOKEN_COOKIE) return { token: value.join("="), from: "cookie" };
  }
  return undefined;
}

/** Whether a request with `url` and `cookieHeader` carries `token` (in its query or its cookie). */
export function admitted(url: URL, cookieHeader: string | undefined, token: string): boolean {
  return sameToken(tokenOf(url, cookieHeader)?.token, token);
}

/** `value` with every SECRET_FIELDS field removed at any depth. Pure: `value` is not changed. */
export function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).filter(([k]) => !SECRET_FIELDS.has(k)).map(([k, v]) => [k, withoutSecrets(v)]));
}

/** Which of `secrets` (the credential's seed, ...) occur in `text`; empty ones are ignored. */
export function leaksIn(text: string, secrets: readonly string[]): string[] {
  return secrets.filter((s) => s.length > 0 && text.includes(s));
}

/**
 * The JSON text to send for `value`: secret fields removed (withoutSecrets). Throws when a known
 * secret still occurs in it (under another field name): the server answers 500 rather than send it.
 */
export function safeJson(value: unknown, secrets: readonly string[]): string {
  const text = JSON.stringify(withoutSecrets(value));
  if (leaksIn(text, secrets).length > 0) throw new Error("a reply held a secret of the operator's credential: not sent");
  return text;
}
