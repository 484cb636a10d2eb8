/**
 * ESLint (`npm run lint`, run by `make test` next to prettier): typescript-eslint's recommended
 * rules, React's rules of hooks (and its compiler-backed checks), and TanStack Query's rules
 * (query keys that name every input, stable query clients, no rest-destructuring of a query).
 */
import js from "@eslint/js";
import tanstackQuery from "@tanstack/eslint-plugin-query";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist", "node_modules", "test-results", "src/api/schema.d.ts", "e2e/*.mjs", "e2e/*.d.mts"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  reactHooks.configs.flat["recommended-latest"],
  ...tanstackQuery.configs["flat/recommended"],
  {
    // Playwright's fixtures: `use` is its callback, not React's hook; `{}` is how a fixture
    // that needs no other fixture is declared.
    files: ["e2e/**"],
    rules: { "react-hooks/rules-of-hooks": "off", "no-empty-pattern": "off" },
  },
  {
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
    rules: {
      // `_name`: a parameter a signature needs but the body does not use.
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
);
