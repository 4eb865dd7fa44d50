// The in-host test of keeping some hunks of an edit: the approval's diff editor marks each hunk,
// the user rejects the one under the cursor (the key's command), applies the kept one, and the
// file on disk and the tool result in the chat (what the model reads) show exactly that.
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as vscode from "vscode";

export interface HunkTestHost {
  query(selector: string, action?: boolean | { type: string } | { key: string }): Promise<string[]>;
  until<T>(what: string, probe: () => T | Promise<T>, timeoutMs?: number): Promise<NonNullable<T>>;
  sendAndWaitForApproval(text: string): Promise<void>;
  setPolicy(policy: string): Promise<void>;
  idle(): Promise<void>;
  approvalDiffs(): vscode.TabInputTextDiff[];
  folder(): string;
}

const ORIGINAL = Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`).join("");
const SECOND_ONLY = ORIGINAL.replace("line 28\n", "line twenty-eight\n");

export function hunkTests(host: HunkTestHost): [string, () => Promise<void>][] {
  return [["rejecting one of two hunks in the diff editor writes only the other, and the model reads which", async () => {
    const notes = join(host.folder(), "notes.txt");
    writeFileSync(notes, ORIGINAL);
    try {
      await host.setPolicy("ask");
      await host.sendAndWaitForApproval("two changes");
      const [diff] = await host.until("the approval's diff editor", () => (host.approvalDiffs().length === 1 ? host.approvalDiffs() : undefined));
      // The user clicks into the "after" side, on the first hunk's changed line, and presses Ctrl+Alt+H.
      await vscode.commands.executeCommand("workbench.action.focusActiveEditorGroup");
      const after = await host.until("the diff's after side to have the focus", () => {
        const editor = vscode.window.activeTextEditor;
        return editor?.document.uri.toString() === diff.modified.toString() ? editor : undefined;
      });
      assert.equal(after.document.lineAt(1).text, "line two");
      after.selection = new vscode.Selection(1, 0, 1, 0);
      await vscode.commands.executeCommand("pi.approval.toggleHunk");
      const out = process.env.PI_VSCODE_TEST_OUT;
      if (out) {
        const path = join(out, "hunks-in-host.png");
        console.log(`@@screenshot-page ${path}`);
        await host.until("the screenshot", () => existsSync(`${path}.done`), 15_000);
      }
      assert.equal(readFileSync(notes, "utf8"), ORIGINAL, "nothing is written while the user chooses");
      await vscode.commands.executeCommand("pi.approval.applySelected", diff.modified);
      await host.idle();
      assert.equal(readFileSync(notes, "utf8"), SECOND_ONLY);
      const card = (await host.query(".tool[data-tool=edit]")).pop() ?? "";
      assert.match(card, /Successfully applied 1 of 2 hunk\(s\) to notes\.txt\. The user kept hunk\(s\) 2 and rejected hunk\(s\) 1/);
      assert.match(card, /\+line two/, "the rejected hunk is shown to the model");
      await host.until("the diff editor to close", () => host.approvalDiffs().length === 0);
    } finally {
      await vscode.commands.executeCommand("workbench.action.closeAllEditors");
      await host.setPolicy("auto");
      rmSync(notes, { force: true });
    }
  }]];
}
