// Where an error reaches the user: one surface for each, by what it is. A condition that blocks
// every prompt (no daemon, no model) is the chat's banner; an event of the conversation (a failed
// prompt, the daemon's death) is a notice in the chat; a toast only when the chat is not on screen
// (or for a command run from the palette), with the same actions as the chat's buttons.
import * as vscode from "vscode";
import type { NoticeAction } from "../common/chatModel";

/** The daemon could not start: the banner says why (`FolderSession.problem`), nothing else does. */
export class StartError extends Error {}

/**
 * Whether a request failed only because the daemon's connection went away (vscode-jsonrpc rejects
 * what is pending with "Pending response rejected since connection got disposed"): the daemon's
 * exit is reported once, by itself.
 */
export function isConnectionGone(error: unknown, closed: boolean): boolean {
  return closed || (error instanceof Error && /connection (got |is )?disposed|connection is closed/i.test(error.message));
}

/** A toast with the notice's actions; the one picked runs its command. */
export function toast(level: "info" | "error", text: string, actions: readonly NoticeAction[] = []): void {
  const show = level === "error" ? vscode.window.showErrorMessage : vscode.window.showInformationMessage;
  void show(text, ...actions.map((a) => a.label)).then((picked) => {
    const action = actions.find((a) => a.label === picked);
    if (action) void vscode.commands.executeCommand(action.command);
  });
}
