/** The command-line arguments of the benches (`npm run bench -- <name> [args]`). */

/** The value after `name` in `args` (`--nodes 1000` gives "1000"), or undefined when `name` is absent. */
export function option(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}
