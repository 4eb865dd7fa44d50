// Opening what a tool card points at: the full log of a truncated result, the file a truncated
// read came from, and a before/after diff of an edit or write.
import { readFileSync } from "node:fs";
import * as vscode from "vscode";
import { reversePatch } from "../common/patch";
import type { FolderSession } from "./folderSession";

export const BEFORE_SCHEME = "pi-before";

/** Serves diff sides from memory: the "before" of a finished edit, both sides of one awaiting approval. */
export class BeforeContentProvider implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();
  private next = 0;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.query) ?? "";
  }

  uriFor(path: string, content: string, scheme = BEFORE_SCHEME): vscode.Uri {
    const id = String(++this.next);
    this.contents.set(id, content);
    return vscode.Uri.from({ scheme, path, query: id });
  }
}

function resolvePath(session: FolderSession, path: string): vscode.Uri {
  return path.startsWith("/") ? vscode.Uri.file(path) : vscode.Uri.joinPath(session.folder.uri, path);
}

export async function openLog(session: FolderSession, cardKey: string): Promise<void> {
  const card = session.chat.cards[cardKey];
  if (!card) return;
  if (card.fullOutputPath) {
    const document = await vscode.workspace.openTextDocument(vscode.Uri.file(card.fullOutputPath));
    const editor = await vscode.window.showTextDocument(document, { preview: false });
    const last = document.lineCount - 1;
    editor.revealRange(new vscode.Range(last, 0, last, 0));
    return;
  }
  const path = card.args.path;
  if (typeof path === "string") {
    const document = await vscode.workspace.openTextDocument(resolvePath(session, path));
    await vscode.window.showTextDocument(document, { preview: false });
  }
}

export async function openDiff(session: FolderSession, cardKey: string, before: BeforeContentProvider): Promise<void> {
  const card = session.chat.cards[cardKey];
  const path = card?.args.path;
  if (!card || typeof path !== "string") return;
  const target = resolvePath(session, path);
  let original = session.snapshots.get(cardKey);
  if (card.patch) {
    try {
      original = reversePatch(readFileSync(target.fsPath, "utf8"), card.patch);
    } catch {
      // The file is gone: fall back to the snapshot taken before the call ran.
    }
  }
  const name = path.split("/").pop() ?? path;
  await vscode.commands.executeCommand("vscode.diff", before.uriFor(target.path, original ?? ""), target,
    `${name} (before ↔ after ${card.name})`, { preview: false });
}
