import { readFileSync } from "node:fs";
import ts from "typescript";

/**
 * How long a source's functions are, for the size check (issue 28: no function over ~80 lines):
 * every function, method, constructor, accessor, arrow and function expression with its name (the
 * variable or property it is bound to when it has none of its own) and its length in lines.
 */
export type FunctionSize = { name: string; line: number; lines: number };

/** The name a function node goes by: its own, or what it is assigned or bound to; `(anonymous)` else. */
function nameOf(node: ts.Node, source: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name !== undefined) return named.name.getText(source);
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if (parent !== undefined && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) return parent.name.getText(source);
  return "(anonymous)";
}

/** Every function in the TypeScript file at `path`, with its length in lines (first to last line, both counted). */
export function functionSizes(path: string): FunctionSize[] {
  const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const found: FunctionSize[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ name: nameOf(node, source), line: first + 1, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The number of lines of the text at `path` (a last line without a newline counted). */
export function lineCount(path: string): number {
  const text = readFileSync(path, "utf8");
  return text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
}
