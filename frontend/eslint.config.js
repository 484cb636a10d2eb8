/**
 * ESLint (`npm run lint`, run by `make test` next to prettier): typescript-eslint's recommended
 * rules, React's rules of hooks (and its compiler-backed checks), and TanStack Query's rules
 * (query keys that name every input, stable query clients, no rest-destructuring of a query),
 * and the dashboard's one boundary: pages (and the panels they render) own data; views and
 * components render what they are given.
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
    // Pages own data: a view or a component takes what it shows, and the mutations it starts,
    // as props. It imports only types from TanStack Query and from the API's resource modules
    // (their query options and mutations fetch), nothing that sends a request from the client,
    // and no page or panel (those load their own). The client's error helpers and the refresh
    // settings (api/polling) are not requests and stay open to them.
    files: ["src/components/**/*.{ts,tsx}", "src/views/**/*.{ts,tsx}"],
    ignores: ["**/*.test.{ts,tsx}"],
    rules: {
      "no-restricted-imports": "off",
      "@typescript-eslint/no-restricted-imports": [
        "error",
        {
          paths: [
            {
              name: "@tanstack/react-query",
              allowTypeImports: true,
              message:
                "Views and components do not query: the page loads the data and passes it (and its mutations) down.",
            },
            {
              name: "../api/client",
              importNames: ["api", "requestWithMeta"],
              message: "Views and components send no request: the page does, through an api/ resource module.",
            },
          ],
          patterns: [
            {
              group: ["**/api/*", "!**/api/types", "!**/api/client", "!**/api/polling"],
              allowTypeImports: true,
              message:
                "Views and components import only types from the API's resource modules: the page runs the query or mutation and passes the result down.",
            },
            {
              group: ["**/pages/*", "**/panels/*"],
              message:
                "Pages and panels own data: a view takes a panel as a prop (a ReactNode slot) that its page renders.",
            },
          ],
        },
      ],
    },
  },
  {
    languageOptions: { globals: { ...globals.browser, ...globals.node } },
    rules: {
      // `_name`: a parameter a signature needs but the body does not use.
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
);
