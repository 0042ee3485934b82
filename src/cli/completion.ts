/**
 * `mesh completion bash|zsh|fish`: a completion script made from the commander program tree that
 * runCli built (issue 29), so a new verb or option completes without a list kept by hand.
 * treeOf reads the program; the scripts are pure functions of the tree.
 */
import type { Command } from "commander";

/** A command of the program: its word, summary, option flags (`--dry-run`, `-o`) and subcommands. */
export type CommandTree = { name: string; summary: string; options: readonly string[]; commands: readonly CommandTree[] };

/** The shells `mesh completion` writes a script for. */
export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

/** The tree of `command`: every subcommand, each with its long and short flags and `--help`. */
export function treeOf(command: Command): CommandTree {
  const flags = command.options.flatMap((o) => [o.long, o.short].filter((f): f is string => typeof f === "string"));
  return {
    name: command.name(),
    summary: command.description(),
    options: [...flags, "--help"],
    commands: command.commands.filter((c) => c.name() !== "help").map(treeOf),
  };
}

/** Each command of the tree below its root with its words (`["node", "enrol"]`), parents first. */
function walk(tree: CommandTree, path: readonly string[] = []): Array<{ path: readonly string[]; node: CommandTree }> {
  return [{ path, node: tree }, ...tree.commands.flatMap((c) => walk(c, [...path, c.name]))];
}

const quote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;

/** The bash script: the words typed so far pick the command; its subcommands and flags complete. */
function bashScript(tree: CommandTree): string {
  const all = walk(tree);
  const known = all.filter((c) => c.path.length > 0).map((c) => `      ${quote(c.path.join(" "))}) path=${quote(c.path.join(" "))} ;;`);
  const words = all.map((c) => `    ${quote(c.path.join(" "))}) words=${quote([...c.node.commands.map((s) => s.name), ...c.node.options].join(" "))} ;;`);
  return [
    `# ${tree.name} completion for bash: source <(${tree.name} completion bash)`,
    `_${tree.name}_completion() {`,
    `  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" i next words=""`,
    `  for ((i = 1; i < COMP_CWORD; i++)); do`,
    `    next="\${path:+$path }\${COMP_WORDS[i]}"`,
    `    case "$next" in`,
    ...known,
    `    esac`,
    `  done`,
    `  case "$path" in`,
    ...words,
    `  esac`,
    `  COMPREPLY=($(compgen -W "$words" -- "$cur"))`,
    `}`,
    `complete -F _${tree.name}_completion ${tree.name}`,
    "",
  ].join("\n");
}

/** The zsh script: the bash one, through zsh's bashcompinit. */
function zshScript(tree: CommandTree): string {
  return [
    `# ${tree.name} completion for zsh: source <(${tree.name} completion zsh)`,
    "autoload -U +X bashcompinit && bashcompinit",
    bashScript(tree).split("\n").slice(1).join("\n"),
  ].join("\n");
}

/** The fish script: one `complete` line per subcommand and per flag, under the words that lead to it. */
function fishScript(tree: CommandTree): string {
  const lines = [`# ${tree.name} completion for fish: ${tree.name} completion fish | source`, `complete -c ${tree.name} -f`];
  for (const { path, node } of walk(tree)) {
    const under = path.length === 0
      ? "__fish_use_subcommand"
      : path.map((w) => `__fish_seen_subcommand_from ${w}`).join("; and ");
    const leaf = node.commands.length === 0 || path.length === 0 ? "" : `; and not __fish_seen_subcommand_from ${node.commands.map((c) => c.name).join(" ")}`;
    for (const sub of node.commands) lines.push(`complete -c ${tree.name} -n ${quote(under + leaf)} -a ${sub.name} -d ${quote(sub.summary.slice(0, 80))}`);
    if (path.length === 0) continue;
    for (const flag of node.options) {
      lines.push(`complete -c ${tree.name} -n ${quote(under)} ${flag.startsWith("--") ? `-l ${flag.slice(2)}` : `-s ${flag.slice(1)}`}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

/** The completion script of `shell` for the program `tree`. */
export function completionScript(shell: Shell, tree: CommandTree): string {
  return shell === "bash" ? bashScript(tree) : shell === "zsh" ? zshScript(tree) : fishScript(tree);
}
