// The status bar item: what the agent is doing (idle / streaming / running a tool / waiting for
// approval); opens the chat.
import * as vscode from "vscode";
import type { FolderSession } from "./folderSession";

export class PiStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("pi.status", vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = "Pi";
    this.item.command = "pi.openChat";
    this.update(undefined);
    this.item.show();
  }

  update(session: FolderSession | undefined): void {
    const activity = session?.chat.activity ?? { kind: "idle" as const };
    const problem = session?.problem;
    if (problem) {
      this.item.text = "$(warning) Pi";
      this.item.tooltip = problem;
    } else if (activity.kind === "approval") {
      this.item.text = "$(question) Pi: waiting for approval";
      this.item.tooltip = `Pi waits for you to allow or reject a ${activity.name} call. Click to open the chat.`;
    } else if (activity.kind === "streaming") {
      this.item.text = "$(loading~spin) Pi: streaming";
      this.item.tooltip = "Pi is answering. Click to open the chat.";
    } else if (activity.kind === "tool") {
      this.item.text = `$(loading~spin) Pi: running ${activity.name}`;
      this.item.tooltip = `Pi is running the ${activity.name} tool. Click to open the chat.`;
    } else {
      this.item.text = "$(comment-discussion) Pi";
      this.item.tooltip = "Pi is idle. Click to open the chat.";
    }
    void vscode.commands.executeCommand("setContext", "pi.running", session?.isRunning ?? false);
  }

  get text(): string {
    return this.item.text;
  }

  dispose(): void {
    this.item.dispose();
  }
}
