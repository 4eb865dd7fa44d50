// The daemon's `fs/readTextFile` and `fs/writeTextFile`: the agent reads what the user sees (an open
// document's unsaved text) and its writes to an open document go through the editor, as one
// undoable edit, instead of changing the file behind the editor's back.
import * as vscode from "vscode";
import type { TextFileContent } from "../protocol";
import { minimalReplacement } from "../common/textEdit";

function openDocument(path: string): vscode.TextDocument | undefined {
  const uri = vscode.Uri.file(path);
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === uri.fsPath);
}

export async function readTextFile(path: string): Promise<TextFileContent> {
  const document = openDocument(path);
  if (document) return { content: document.getText() };
  const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(path));
  return { content: new TextDecoder().decode(bytes) };
}

/**
 * An open document gets the change as a `WorkspaceEdit` (undo reverts it) and is saved only if it
 * had no unsaved changes before, so the user's own pending edits stay theirs to save. Any other
 * file is written through VS Code's file system, which open editors and watchers follow.
 */
export async function writeTextFile(path: string, content: string): Promise<null> {
  const document = openDocument(path);
  if (!document) {
    const uri = vscode.Uri.file(path);
    await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, ".."));
    await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(content));
    return null;
  }
  const wasDirty = document.isDirty;
  const change = minimalReplacement(document.getText(), content);
  const edit = new vscode.WorkspaceEdit();
  edit.replace(document.uri, new vscode.Range(document.positionAt(change.start), document.positionAt(change.end)), change.text);
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`VS Code refused the edit of ${path}`);
  if (!wasDirty && !(await document.save())) throw new Error(`VS Code could not save ${path}`);
  return null;
}
