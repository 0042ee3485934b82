/**
 * What the host reads of a user list's text. The declaration it applies and the report it publishes
 * are the contracts of src/contracts (declaration.ts, report.ts), shared with the controller.
 */

/** The user names of a user-list include file as renderUserList writes it (one `{user: "..."` per line). */
export function usersOfListText(text: string): string[] {
  return [...text.matchAll(/\{user: ("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]!) as string);
}
