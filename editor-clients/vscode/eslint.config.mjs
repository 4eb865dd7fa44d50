// ESLint for the extension's TypeScript (`npm run lint`): eslint's and typescript-eslint's
// recommended rules with type information (the project service reads tsconfig.json), and the
// layering of src/ checked by `no-restricted-imports`, one block per folder;
// test/unit/layering.test.ts proves each folder's rule fires.
import { builtinModules } from "node:module";
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import tseslint from "typescript-eslint";

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

// Each folder of src/ and what it must not import. The webview runs in a browser iframe and reaches
// the host only through bridge messages, so it and `common` (bundled into it) import neither
// vscode, nor Node, nor the host side; `client` is the daemon's client and knows no VS Code; the
// extension host is the only place that imports vscode and never pulls the webview's DOM code in.
// `../client/x` from a file of the folder, `../../client/x` from one a level deeper.
const sibling = (folders, why) => ({
  regex: `^(\\.\\./)+(${folders.join("|")})(/|$)`,
  message: why,
});
const noVscode = (why) => ({ name: "vscode", message: why });
const noNode = (why) => nodeBuiltins.map((name) => ({ name, message: why }));
const noJsonRpc = (why) => ({ regex: "^vscode-jsonrpc(/|$)", message: why });

const layers = {
  protocol: {
    paths: [noVscode("protocol/ is the generated wire types: it imports nothing."), ...noNode("protocol/ imports nothing.")],
    patterns: [sibling(["client", "common", "extension", "webview"], "protocol/ is the generated wire types: it imports nothing.")],
  },
  common: {
    paths: [
      noVscode("common/ runs in the webview too: no vscode."),
      ...noNode("common/ is bundled into the webview (a browser): no Node modules."),
    ],
    patterns: [
      sibling(["client", "extension", "webview"], "common/ is shared by host and webview and imports only protocol/."),
      noJsonRpc("common/ runs in the webview too: the JSON-RPC connection belongs to client/."),
    ],
  },
  client: {
    paths: [noVscode("client/ is the daemon's client and has no VS Code imports (README, Layout).")],
    patterns: [sibling(["extension", "webview"], "client/ sits below the extension host and knows neither it nor the webview.")],
  },
  extension: {
    paths: [],
    patterns: [sibling(["webview"], "The webview is a separate browser bundle: talk to it through common/bridge messages.")],
  },
  webview: {
    paths: [
      noVscode("The webview runs in a browser iframe: no vscode (use common/bridge messages)."),
      ...noNode("The webview runs in a browser iframe: no Node modules."),
    ],
    patterns: [
      sibling(["client", "extension"], "The webview reaches the host only through common/bridge messages."),
      noJsonRpc("The webview reaches the daemon only through the host's bridge messages."),
    ],
  },
};

export default defineConfig(
  { ignores: ["dist/", "out/", "node_modules/", ".vscode-test-host/", "**/*.mjs", "**/*.js"] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      // node:test runs every test() and describe() it was handed; the promise they return is the
      // runner's, and awaiting it would serialise the file's tests.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "describe", "it", "suite"] }] },
      ],
      // Passing on what a `catch` caught (`unknown`) as a rejection is the promise form of
      // `throw error`, which only-throw-error allows by default too.
      "@typescript-eslint/prefer-promise-reject-errors": ["error", { allowThrowingUnknown: true }],
    },
  },
  ...Object.entries(layers).map(([folder, { paths, patterns }]) => ({
    files: [`src/${folder}/**/*.ts`],
    rules: { "@typescript-eslint/no-restricted-imports": ["error", { paths, patterns }] },
  })),
);
