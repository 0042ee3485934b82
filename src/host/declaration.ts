/**
 * What the host reads of a user list's text. The declaration it applies and the report it publishes
 * are the contracts of src/contracts (declaration.ts, report.ts), shared with the controller.
 */

/**
 * The nkey public key of each user of a user-list include file as renderUserList writes it
 * (`{nkey: "U...", ...}  # <name>` per line), by name (R44, R64). Lines of another shape are skipped.
 */
export function keysOfListText(text: string): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^\s*\{nkey: "(U[A-Z2-7]{55})", .*\}\s*#\s*(\S+)\s*$/.exec(line);
    if (m) keys[m[2]!] = m[1]!;
  }
  return keys;
}

/**
 * The user names of a user-list include file as renderUserList writes it (one user per line): a
 * user from before nkeys by its `{user: "..."`, an nkey user (R63) by the name in its line's
 * trailing `# <name>` comment, so the controller compares names with its records (R43, R44).
 */
export function usersOfListText(text: string): string[] {
  const names: string[] = [];
  for (const line of text.split("\n")) {
    const user = /^\s*\{user: ("(?:[^"\\]|\\.)*")/.exec(line);
    if (user) { names.push(JSON.parse(user[1]!) as string); continue; }
    const nkey = /^\s*\{nkey: .*\}\s*#\s*(\S+)\s*$/.exec(line);
    if (nkey) names.push(nkey[1]!);
  }
  return names;
}
