// Bundles the extension (Node, CommonJS) and the chat webview (browser IIFE + CSS) into dist/.
// --production minifies; --tests also bundles the unit tests and the in-host suite into out/.
import { mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: "warning", absWorkingDir: root };

// `npm run package` writes out/pi-vscode.vsix, and vsce does not create the folder (fresh clone).
mkdirSync(join(root, "out"), { recursive: true });

await Promise.all([
  esbuild.build({ ...common, entryPoints: ["src/extension/extension.ts"], outfile: "dist/extension.js",
    platform: "node", format: "cjs", target: "node20", external: ["vscode"] }),
  esbuild.build({ ...common, entryPoints: ["src/webview/main.ts"], outfile: "dist/webview.js",
    platform: "browser", format: "iife", target: "chrome120" }),
  esbuild.build({ ...common, entryPoints: ["media/chat.css"], outfile: "dist/webview.css", loader: { ".ttf": "dataurl" } }),
]);

if (process.argv.includes("--tests")) {
  const unit = readdirSync(join(root, "test/unit")).filter((f) => f.endsWith(".test.ts")).map((f) => `test/unit/${f}`);
  await Promise.all([
    esbuild.build({ ...common, sourcemap: true, entryPoints: unit, outdir: "out/test/unit", platform: "node",
      format: "cjs", target: "node20", external: ["vscode", "json-schema-to-typescript", "eslint"] }),
    esbuild.build({ ...common, sourcemap: true, entryPoints: ["test/host/suite.ts", "test/host/bench.ts"], outdir: "out/test/host",
      platform: "node", format: "cjs", target: "node20", external: ["vscode"] }),
  ]);
}
