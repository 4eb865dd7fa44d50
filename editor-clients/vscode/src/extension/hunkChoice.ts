// The hunks of a waiting edit or write in its diff editor: each hunk's changed lines carry a mark
// (kept, or rejected and struck through) that says how to toggle it, and the toggle acts on the
// hunk under the cursor (or one named by index, from the chat card). What is kept when the user
// answers goes with the answer (`hunks`), so the daemon applies only those.
import * as vscode from "vscode";
import { changedLines, hunkAt, keptForAnswer } from "../common/hunkChoice";
import type { DiffHunk } from "../protocol";

interface Choice {
  hunks: DiffHunk[];
  kept: Set<number>;
  /** The diff editor's "after" side, where the marks go. */
  after: vscode.Uri;
}

export class HunkChoices implements vscode.Disposable {
  private readonly choices = new Map<string, Choice>();
  private readonly keptMark = vscode.window.createTextEditorDecorationType({});
  private readonly rejectedMark = vscode.window.createTextEditorDecorationType({
    isWholeLine: true, opacity: "0.45", textDecoration: "line-through",
    backgroundColor: new vscode.ThemeColor("diffEditor.removedLineBackground"),
  });
  private readonly listening = vscode.window.onDidChangeVisibleTextEditors(() => this.refresh());

  /** Follows a waiting call whose diff has hunks to choose from (one hunk is kept or rejected whole). */
  open(toolCallId: string, hunks: DiffHunk[], after: vscode.Uri): void {
    if (hunks.length < 2 || this.choices.has(toolCallId)) return;
    this.choices.set(toolCallId, { hunks, kept: new Set(hunks.map((h) => h.index)), after });
    this.refresh();
  }

  close(toolCallId: string): void {
    this.choices.delete(toolCallId);
  }

  /** The call whose diff shows `uri` on its "after" side. */
  callShowing(uri: vscode.Uri): string | undefined {
    for (const [toolCallId, choice] of this.choices) if (choice.after.toString() === uri.toString()) return toolCallId;
    return undefined;
  }

  /** Toggles hunk `index`, or the hunk at `line` (0-based, on the after side); false when there is none. */
  toggle(toolCallId: string, at: { index?: number; line?: number }): boolean {
    const choice = this.choices.get(toolCallId);
    const hunk = choice && (at.index !== undefined ? choice.hunks.find((h) => h.index === at.index) : hunkAt(choice.hunks, at.line ?? 0));
    if (!choice || !hunk) return false;
    if (!choice.kept.delete(hunk.index)) choice.kept.add(hunk.index);
    this.refresh();
    return true;
  }

  /** What the answer names: undefined when every hunk is kept (or there is no choice). */
  kept(toolCallId: string): number[] | undefined {
    const choice = this.choices.get(toolCallId);
    return choice && keptForAnswer(choice.hunks, choice.kept);
  }

  private refresh(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      const choice = [...this.choices.values()].find((c) => c.after.toString() === editor.document.uri.toString());
      if (!choice) continue;
      const kept: vscode.DecorationOptions[] = [];
      const rejected: vscode.DecorationOptions[] = [];
      const total = choice.hunks.length;
      for (const hunk of choice.hunks) {
        const keeps = choice.kept.has(hunk.index);
        const lines = changedLines(hunk).filter((l) => l < editor.document.lineCount);
        const label = keeps
          ? `  ✓ hunk ${hunk.index + 1}/${total} kept · Ctrl+Alt+H rejects`
          : `  ✗ hunk ${hunk.index + 1}/${total} rejected · Ctrl+Alt+H keeps`;
        const color = new vscode.ThemeColor(keeps ? "editorCodeLens.foreground" : "errorForeground");
        lines.forEach((line, i) => {
          const range = editor.document.lineAt(line).range;
          const option: vscode.DecorationOptions = i === 0
            ? { range, renderOptions: { after: { contentText: label, color, fontStyle: "italic", textDecoration: "none" } } }
            : { range };
          (keeps ? kept : rejected).push(option);
        });
      }
      editor.setDecorations(this.keptMark, kept);
      editor.setDecorations(this.rejectedMark, rejected);
    }
  }

  dispose(): void {
    this.choices.clear();
    this.listening.dispose();
    this.keptMark.dispose();
    this.rejectedMark.dispose();
  }
}
