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
 * The variables of an env file envFileText wrote (its inverse; lines that are empty or start
 * with `#` are skipped, an unquoted `KEY=value` line is read as written). Throws an Error naming
 * the line number of a line it cannot read.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=(?:'([^']*)'|([^'"]*))$/.exec(line);
    if (!match) throw new Error(`env file line ${i + 1} is not KEY='value'`);
    out[match[1]!] = match[2] ?? match[3]!;
  }
  return out;
}
