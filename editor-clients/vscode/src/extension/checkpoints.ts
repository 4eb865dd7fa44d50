// Rewinding from the chat: the restore button and edit-and-resend of a user message. The host
// asks the daemon what a rewind would change (`session/checkpoints`), shows it in the view's
// rewind bar, runs `session/rewind`, opens conflicts in a diff editor and restores them when asked.
//
// Where restores land: a file the agent's edit or write tools changed comes back through
// `fs/writeTextFile` (an open editor gets one undoable edit, unsaved text included: the daemon
// read that text and reports a user's change as a conflict); a file a shell command changed is
// put back on disk. Afterwards a clean editor of such a file is given the disk's text as one
// undoable edit, and a dirty one keeps the user's unsaved text and is listed (with a diff against
// the disk; also when the file was removed), so nothing the user typed is replaced without their
// saying so.
import { existsSync, readFileSync } from "node:fs";
import * as vscode from "vscode";
import type { CheckpointInfo, RewindConflict, RewindResult } from "../protocol";
import { minimalReplacement } from "../common/textEdit";
import { checkpointOf, filesToRestore, relativeLabel, type RestoreTarget, restoredText, type RewindPanel } from "../common/checkpoints";
import { typedText } from "../common/mentions";
import type { ChatViewProvider } from "./chatView";
import type { BeforeContentProvider } from "./documents";
import { readTextFile } from "./editorFiles";
import type { FolderSession } from "./folderSession";

interface Pending {
  session: FolderSession;
  entryId: string;
  panel: RewindPanel;
  conflicts: RewindConflict[];
  /** Set once the files are done (restored or left alone): only the conversation is left. */
  filesDone: boolean;
}

function openDocument(path: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
}

function diskText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

export class RewindController {
  private pending?: Pending;

  constructor(private readonly view: ChatViewProvider, private readonly before: BeforeContentProvider) {}

  /** The restore button: the files a rewind to before message `key` would put back, and the choice. */
  async ask(session: FolderSession, key: string): Promise<void> {
    const { entry, files, notCaptured } = await this.lookup(session, key);
    const panel: RewindPanel = {
      stage: "choose", messageText: entry.text, restore: files.length > 0 ? "both" : "conversation",
      files, notCaptured, conflicts: [], unsavedKept: [],
    };
    this.pending = { session, entryId: entry.entryId, panel, conflicts: [], filesDone: false };
    this.show();
  }

  /** Edit-and-resend: files and conversation back to before message `key`, then `text` is sent. */
  async resend(session: FolderSession, key: string, text: string): Promise<void> {
    const { entry, files, notCaptured } = await this.lookup(session, key);
    const panel: RewindPanel = {
      stage: "choose", messageText: entry.text, resendText: text, restore: "both", files, notCaptured, conflicts: [], unsavedKept: [],
    };
    this.pending = { session, entryId: entry.entryId, panel, conflicts: [], filesDone: false };
    await this.settle("both", false);
  }

  /** The bar's answer: rewind the files, the conversation or both. */
  async choose(restore: RestoreTarget): Promise<void> {
    if (!this.pending) return;
    this.pending.panel.restore = restore;
    await this.settle(restore, false);
  }

  /** "Restore anyway": the conflicting files too, then the conversation if it was asked for. */
  async force(): Promise<void> {
    if (this.pending) await this.settle(this.pending.panel.restore, true);
  }

  /** "Leave them": keep the conflicting files as they are and go on with the conversation. */
  async skip(): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    pending.filesDone = true;
    if (pending.panel.restore === "files") this.close();
    else await this.settle(pending.panel.restore, false);
  }

  close(): void {
    this.pending = undefined;
    this.view.post({ type: "rewindPanel", panel: null });
  }

  /** A diff editor: a conflict's file now against what the rewind would restore, or an unsaved editor against the disk. */
  async diff(path: string, unsaved = false): Promise<void> {
    const name = path.split("/").pop() ?? path;
    if (unsaved) {
      await vscode.commands.executeCommand("vscode.diff", vscode.Uri.file(path), this.before.uriFor(path, diskText(path) ?? ""),
        `${name} (your unsaved text ↔ restored on disk)`, { preview: false });
      return;
    }
    const conflict = this.pending?.conflicts.find((c) => c.path === path);
    if (!conflict) return;
    const now = existsSync(path) ? (await readTextFile(path)).content : "";
    const restored = restoredText(now, conflict) ?? conflict.diff;
    const left = existsSync(path) ? vscode.Uri.file(path) : this.before.uriFor(path, "");
    await vscode.commands.executeCommand("vscode.diff", left, this.before.uriFor(path, restored),
      `${name} (now ↔ before the rewound message)`, { preview: false });
  }

  private show(): void {
    if (this.pending) this.view.post({ type: "rewindPanel", panel: this.pending.panel });
  }

  private async lookup(session: FolderSession, key: string): Promise<{ entry: CheckpointInfo; files: RewindPanel["files"]; notCaptured: string[] }> {
    if (session.isRunning) throw new Error("Pi is still working: stop the run before rewinding.");
    const { checkpoints } = await (await session.client()).request("session/checkpoints");
    const index = checkpointOf(session.chat, key, checkpoints);
    if (index === undefined) throw new Error("This message is not a restore point of the current session.");
    const notCaptured = [...new Set(checkpoints.slice(0, index + 1).flatMap((c) => c.notCaptured))];
    return { entry: checkpoints[index], files: filesToRestore(checkpoints, index, session.folder.uri.fsPath), notCaptured };
  }

  /** Runs the rewind; a failure (the daemon's error reaches the chat) closes the bar, whose buttons it disabled. */
  private async settle(restore: RestoreTarget, force: boolean): Promise<void> {
    try {
      await this.run(restore, force);
    } catch (error) {
      this.close();
      throw error;
    }
  }

  private async run(restore: RestoreTarget, force: boolean): Promise<void> {
    const pending = this.pending;
    if (!pending) return;
    const { session, panel } = pending;
    const client = await session.client();
    if (restore !== "conversation" && !pending.filesDone) {
      const result = await this.rewindFiles(pending, force);
      panel.conflicts = result.conflicts.map((c) => ({ path: c.path, label: relativeLabel(c.path, session.folder.uri.fsPath) }));
      pending.conflicts = result.conflicts;
      for (const note of result.notRestored) if (!panel.notCaptured.includes(note)) panel.notCaptured.push(note);
      if (result.conflicts.length > 0) {
        panel.stage = "conflicts";
        this.show();
        return;
      }
      pending.filesDone = true;
    }
    if (restore !== "files") {
      const result = await client.request("session/rewind", { entryId: pending.entryId, restore: "conversation" });
      await session.reloadChat();
      if (panel.resendText !== undefined) void session.send(panel.resendText, []).catch((error: unknown) => session.reportError(error));
      else if (result.text) this.view.post({ type: "setInput", text: typedText(result.text) });
    }
    if (panel.unsavedKept.length > 0) {
      panel.stage = "conflicts";
      panel.conflicts = [];
      this.show();
      return;
    }
    this.close();
  }

  /** `session/rewind` of the files, then the editors of files restored on disk brought up to date. */
  private async rewindFiles(pending: Pending, force: boolean): Promise<RewindResult> {
    const throughEditor = new Set<string>();
    const listener = (path: string): void => void throughEditor.add(path);
    pending.session.editorWrites.add(listener);
    let result: RewindResult;
    try {
      result = await (await pending.session.client()).request("session/rewind", { entryId: pending.entryId, restore: "files", force });
    } finally {
      pending.session.editorWrites.delete(listener);
    }
    for (const path of result.restored) {
      if (throughEditor.has(path)) continue;
      const document = openDocument(path);
      const text = diskText(path);
      if (!document || document.getText() === text) continue;
      // A dirty editor of a file put back (or removed) on disk keeps the user's text, and says so.
      if (document.isDirty) {
        if (!pending.panel.unsavedKept.some((f) => f.path === path)) pending.panel.unsavedKept.push({ path, label: relativeLabel(path, pending.session.folder.uri.fsPath) });
        continue;
      }
      if (text === undefined) continue; // removed: VS Code marks its clean editor as deleted
      // One undoable edit, so Ctrl+Z in that editor brings the agent's version back, as for the others.
      const change = minimalReplacement(document.getText(), text);
      const edit = new vscode.WorkspaceEdit();
      edit.replace(document.uri, new vscode.Range(document.positionAt(change.start), document.positionAt(change.end)), change.text);
      if (await vscode.workspace.applyEdit(edit)) await document.save();
    }
    return result;
  }
}
