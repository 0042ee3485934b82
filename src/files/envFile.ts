/**
 * A module's `env` file (issue 27): one `KEY='value'` line per variable, sorted by name, so that
 * the same file reads unchanged in a POSIX shell (`set -a; . ./env`), in systemd's
 * `EnvironmentFile=` and in `node --env-file` (Node 20.6+). In all three a single-quoted value is
 * taken verbatim: no escapes, no expansion of `$` or backquotes, `#` and spaces kept (systemd.exec(5):
 * "can contain any character verbatim other than single quote"). A value none of them can carry
 * verbatim is refused instead of escaped, since their escapes differ. Pure.
 */

/** A variable name every reader takes: a shell name. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * What no reader takes verbatim inside single quotes: the quote itself; a line break (the shell
 * and systemd would carry it, `node --env-file` of Node 20 does not); NUL, the byte order mark,
 * a lone surrogate (not UTF-8) and the noncharacters, which systemd refuses.
 */
const UNSAFE = /['\n\r\0\ufeff\ufdd0-\ufdef\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** An environment no env file can carry: `variable` names it, the message says why and what to do. */
export class EnvFileError extends Error {
  override readonly name = "EnvFileError";
  constructor(readonly variable: string, message: string) {
    super(message);
  }
}

/**
 * The text of an env file holding `env`: `KEY='value'` lines sorted by name, each ended by a
 * newline (empty for no variables). Throws EnvFileError naming the variable whose name is not a
 * shell name, or whose value holds a single quote, a line break, NUL, U+FEFF, a noncharacter or
 * a lone surrogate.
 */
export function envFileText(env: Readonly<Record<string, string>>): string {
  let text = "";
  for (const key of Object.keys(env).sort()) {
    if (!NAME.test(key)) throw new EnvFileError(key, `environment variable "${key.slice(0, 80)}" is not a shell name: use letters, digits and _, not starting with a digit`);
    const value = env[key]!;
    const bad = UNSAFE.exec(value);
    if (bad) {
      const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
      throw new EnvFileError(key, `environment variable ${key} holds U+${code}, which an env file cannot carry verbatim for sh, systemd and node alike: leave it out of the value`);
    }
    text += `${key}='${value}'\n`;
  }
  return text;
}

/**
 * The value of one `KEY=value` line: unquoted as is, or single-quoted as a POSIX shell writes it
 * (`'a'\''b'` is `a'b`), which systemd's EnvironmentFile and node --env-file read too. Pure.
 */
function unquote(raw: string): string {
  if (!raw.startsWith("'")) return raw;
  let value = "";
  let at = 0;
  while (at < raw.length) {
    if (raw.startsWith("\\'", at)) {
      value += "'";
      at += 2;
    } else if (raw[at] === "'") {
      const end = raw.indexOf("'", at + 1);
      if (end < 0) return raw;
      value += raw.slice(at + 1, end);
      at = end + 1;
    } else {
      return raw;
    }
  }
  return value;
}

/**
 * An env file's text as key → value: envFileText's inverse, and what a person writes by hand too:
 * `KEY=value` lines, values unquoted or single-quoted; blank lines, `#` comments and an `export `
 * before a key are skipped, as is a line with no `=`. Pure; throws nothing.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const trimmed = line.trim().replace(/^export\s+/, "");
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const at = trimmed.indexOf("=");
    if (at <= 0) continue;
    env[trimmed.slice(0, at)] = unquote(trimmed.slice(at + 1));
  }
  return env;
}
