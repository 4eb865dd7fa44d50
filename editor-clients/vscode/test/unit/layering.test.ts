// The layering of src/ that eslint.config.mjs enforces: each folder's forbidden imports are reported
// and its allowed ones are not. The probes are linted as text under a path in the folder (no file is
// written); only the import rule runs, so no type information is needed.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ESLint } from "eslint";
import { EXT_ROOT } from "./helpers";

const RULE = "@typescript-eslint/no-restricted-imports";

const eslint = new ESLint({
  cwd: EXT_ROOT,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => ruleId === RULE,
});

/** The messages the import rule reports for one import statement in a file of `folder`. */
async function violations(folder: string, statement: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${statement}\n`, { filePath: join(EXT_ROOT, "src", folder, "layeringProbe.ts") });
  assert.ok(result, "ESLint linted the probe");
  return result.messages.map((m) => `${m.ruleId ?? "fatal"}: ${m.message}`);
}

const FORBIDDEN: [folder: string, statement: string][] = [
  ["webview", 'import * as vscode from "vscode";'],
  ["webview", 'import type { FolderSession } from "../extension/folderSession";'],
  ["webview", 'import { PiClient } from "../client/piClient";'],
  ["webview/cards", 'import { FolderSession } from "../../extension/folderSession";'],
  ["webview", 'import { readFileSync } from "node:fs";'],
  ["webview", 'import { join } from "path";'],
  ["webview", 'import { createMessageConnection } from "vscode-jsonrpc/browser";'],
  ["common", 'import * as vscode from "vscode";'],
  ["common", 'import { DaemonProcess } from "../client/daemonProcess";'],
  ["common", 'export { activate } from "../extension/extension";'],
  ["common", 'import { renderToolCard } from "../webview/toolCard";'],
  ["common", 'import { spawn } from "node:child_process";'],
  ["client", 'import * as vscode from "vscode";'],
  ["client", 'import { FolderSession } from "../extension/folderSession";'],
  ["client", 'import { renderToolCard } from "../webview/toolCard";'],
  ["extension", 'import { renderToolCard } from "../webview/toolCard";'],
  ["protocol", 'import type { ChatState } from "../common/chatModel";'],
];

const ALLOWED: [folder: string, statement: string][] = [
  ["webview", 'import { applyEvent } from "../common/chatModel";'],
  ["webview", 'import MarkdownIt from "markdown-it";'],
  ["common", 'import type { AgentEvent } from "../protocol";'],
  ["client", 'import { spawn } from "node:child_process";'],
  ["client", 'import { createMessageConnection } from "vscode-jsonrpc/node";'],
  ["extension", 'import * as vscode from "vscode";'],
  ["extension", 'import { PiClient } from "../client/piClient";'],
  ["extension", 'import type { HostToView } from "../common/bridge";'],
];

describe("the layering of src/ (eslint.config.mjs)", () => {
  for (const [folder, statement] of FORBIDDEN) {
    test(`src/${folder}/ may not: ${statement}`, async () => {
      const messages = await violations(folder, statement);
      assert.equal(messages.length, 1, messages.join("\n"));
      assert.ok(messages[0]?.startsWith(`${RULE}: `), messages[0]);
    });
  }

  for (const [folder, statement] of ALLOWED) {
    test(`src/${folder}/ may: ${statement}`, async () => {
      assert.deepEqual(await violations(folder, statement), []);
    });
  }

  test("every folder of src/ has its import rule", async () => {
    const folders = readdirSync(join(EXT_ROOT, "src"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    assert.ok(folders.length >= 5, folders.join(", "));
    for (const folder of folders) {
      const config = (await eslint.calculateConfigForFile(join(EXT_ROOT, "src", folder, "layeringProbe.ts"))) as { rules?: Record<string, unknown> };
      assert.ok(config.rules?.[RULE], `src/${folder}/ has no ${RULE} in eslint.config.mjs`);
    }
  });
});
