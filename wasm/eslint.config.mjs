// ESLint for the browser runtime and the Node scripts (`npm run lint`); tsc --checkJs checks the types
// (tsconfig.page.json, tsconfig.workers.json).
import js from "@eslint/js";
import globals from "globals";

const WORKERS = ["runtime/worker.js", "runtime/encoder.js", "runtime/python_start.js", "runtime/embedding.js", "runtime/download.js"];

export default [
  { ignores: ["node_modules/"] },
  js.configs.recommended,
  {
    files: ["runtime/**/*.js"],
    languageOptions: { sourceType: "module", globals: globals.browser },
    rules: {
      "no-unused-vars": ["error", { args: "after-used", ignoreRestSiblings: true }],
      eqeqeq: "error",
      "prefer-const": "error",
      "no-var": "error",
      // One idea per module and functions that fit on a screen (issue 21's limits).
      "max-lines": ["error", 450],
      "max-lines-per-function": ["error", { max: 60, skipBlankLines: true, skipComments: true }],
    },
  },
  { files: WORKERS, languageOptions: { globals: globals.worker } },
  { files: ["node/**/*.mjs", "eslint.config.mjs"], languageOptions: { sourceType: "module", globals: globals.node } },
];
