/**
 * NATS subject matching as the server applies permissions: `*` matches one token, `>` one or more
 * trailing tokens. `covers(pattern, subject)` is true when every subject `subject` can name is
 * also named by `pattern` (a subscription on a wildcard needs a grant at least as wide).
 */
export function covers(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    const token = p[i]!;
    if (token === ">") return s.length > i;
    if (i >= s.length) return false;
    const asked = s[i]!;
    if (asked === ">") return false;
    if (token === "*") continue;
    if (asked === "*" || token !== asked) return false;
  }
  return p.length === s.length;
}
