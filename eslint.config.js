// Lint (issue 12): typescript-eslint with type information over the whole project, run by
// `npm run lint` and so by `npm test` and CI. The rules that matter most are the ones the type
// checker cannot give: a promise nobody awaits (its rejection is lost, or it races the code after
// it: `no-floating-promises`, `no-misused-promises`, `await-thenable`) and a switch over a union
// that forgets a member (an event type the union gains and a fold misses:
// `switch-exhaustiveness-check`, strict: a `default` does not stand in for the members it hides). The recommended syntactic set comes with them; the stylistic
// type-checked rules (assertions, require-await, base-to-string) are left out: a hundred findings
// of taste in files other work is changing.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/**", "**/*.js", "**/*.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": ["error", {
        // node:test's describe/it/before... return promises the runner itself awaits.
        allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["describe", "it", "test", "suite", "before", "after", "beforeEach", "afterEach"] }],
      }],
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/only-throw-error": "error",
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      // A leading underscore marks a binding kept on purpose (a destructured field dropped, a
      // parameter a signature requires).
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" }],
    },
  },
);
