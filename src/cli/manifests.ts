import { readFileSync } from "node:fs";
import type { AnyReply } from "../contracts/verbs.ts";
import { UsageError } from "./context.ts";
import { MAX_JSON_DEPTH, jsonDepthOver } from "../commands/validation.ts";

/** A manifest file as the CLI read it: its path and its JSON, not yet judged (the controller does). */
export type ManifestFile = { file: string; manifest: unknown };

/**
 * Reads each manifest file as JSON. Throws UsageError naming the file when one is unreadable, not
 * JSON, or nested deeper than MAX_JSON_DEPTH.
 */
export function readManifestFiles(files: readonly string[]): ManifestFile[] {
  return files.map((file) => {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      throw new UsageError(`cannot read ${file}: pass the path of a module.json`);
    }
    let manifest: unknown;
    try {
      manifest = JSON.parse(text) as unknown;
    } catch (error) {
      throw new UsageError(`${file} is not JSON (${error instanceof Error ? error.message : "parse error"}): fix the file`);
    }
    if (jsonDepthOver(manifest)) throw new UsageError(`${file} nests arrays or objects more than ${MAX_JSON_DEPTH} deep: a module.json never needs that; fix the file`);
    return { file, manifest };
  });
}

/**
 * The stderr line `mesh module register` ends with when some manifests of several were refused:
 * how many and which, then what became of the others, named as what they were: registered (new
 * events), or unchanged (the records already said them: `unchanged` or `duplicate` replies, or a
 * dry run that would append nothing). With `dryRun`, "would be" instead of "was". Undefined when
 * nothing was refused or only one manifest was given (its own line says it all).
 */
export function registrationSummary(results: ReadonlyArray<{ file: string; reply: AnyReply }>, dryRun: boolean): string | undefined {
  const refused = results.filter((r) => !r.reply.ok).map((r) => r.file);
  if (refused.length === 0 || results.length < 2) return undefined;
  const nothingNew = (reply: AnyReply): boolean => reply.ok && (reply.unchanged === true || reply.duplicate === true
    || (dryRun && Array.isArray(reply.events) && reply.events.length === 0));
  const unchanged = results.filter((r) => nothingNew(r.reply)).map((r) => r.file);
  const registered = results.filter((r) => r.reply.ok && !nothingNew(r.reply)).map((r) => r.file);
  const head = `refused ${refused.length} of ${results.length} (${refused.join(", ")})`;
  const was = (count: number): string => (dryRun ? "would be" : count === 1 ? "was" : "were");
  const groups = [{ files: registered, what: "registered" }, { files: unchanged, what: "unchanged" }].filter((g) => g.files.length > 0);
  if (groups.length === 0) return head;
  if (groups.length === 1) {
    const { files, what } = groups[0]!;
    return `${head}; the ${files.length === 1 ? "other" : "others"} ${was(files.length)} ${what}`;
  }
  return `${head}; ${groups.map(({ files, what }) => `${files.length} ${was(files.length)} ${what} (${files.join(", ")})`).join(", ")}`;
}
