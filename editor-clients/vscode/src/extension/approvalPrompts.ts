// Where a call waiting for approval meets the user, besides its chat card (drawn from the events):
// a before/after diff editor for an edit or write, with Allow / Allow Always / Reject in its title
// bar; a notification while the chat is hidden; a reason box for a rejection. Every piece closes
// when the request is answered anywhere or the daemon cancels it (an abort).
import * as vscode from "vscode";
import type { ApprovalDecision, ApprovalRequest } from "../protocol";
import type { BeforeContentProvider } from "./documents";
import type { FolderSession } from "./folderSession";

/** The scheme of an approval's before/after documents (the diff editor's title actions match it). */
export const APPROVAL_SCHEME = "pi-approval";

type Outcome = ApprovalDecision["outcome"];

interface Shown {
  session: FolderSession;
  request: ApprovalRequest;
  /** The diff editor's two sides, when one was opened. */
  sides: vscode.Uri[];
  /** Cancels an open reason box or notification follow-up. */
  closed: vscode.CancellationTokenSource;
}

export class ApprovalPrompts implements vscode.Disposable {
  private readonly shown = new Map<string, Shown>();

  constructor(
    private readonly contents: BeforeContentProvider,
    /** Whether the chat view is on screen (then its card asks, and no notification is needed). */
    private readonly chatVisible: () => boolean,
    private readonly revealChat: () => void,
  ) {}

  /** Follows one folder's queue of waiting calls. */
  attach(session: FolderSession): vscode.Disposable {
    const subscription = session.approvals.onChange((change) => {
      if (change.kind === "added") void this.open(session, change.request);
      else this.close(change.request.toolCallId);
    });
    return { dispose: () => subscription.dispose() };
  }

  /** The call a title-bar action was run on (its argument is the editor's resource), else the latest. */
  requestFor(uri?: vscode.Uri): Shown | undefined {
    const all = [...this.shown.values()];
    if (uri) {
      const found = all.find((s) => s.sides.some((side) => side.toString() === uri.toString()));
      if (found) return found;
    }
    return all.pop();
  }

  /** Answers a waiting call; a rejection with `askReason` first asks why (Escape keeps it waiting). */
  async decide(toolCallId: string, outcome: Outcome, reason?: string, askReason = false): Promise<void> {
    const shown = this.shown.get(toolCallId);
    if (!shown) return;
    let why = reason;
    if (outcome === "reject" && askReason) {
      why = await vscode.window.showInputBox({
        title: `Reject: ${shown.request.title}`,
        prompt: "Why? (optional: Pi reads this and can try another way)",
        ignoreFocusOut: true,
      }, shown.closed.token);
      if (why === undefined) return;
    }
    // "Allow Always" is kept by the daemon in the user's rules for this folder (`save`), so a
    // restarted daemon, a reloaded window and the next session remember it.
    shown.session.approvals.decide(toolCallId, {
      outcome, ...(outcome === "reject" && why ? { reason: why } : {}), ...(outcome === "allowAlways" ? { save: true } : {}),
    });
  }

  /** Opens (again) the before/after diff of a waiting edit or write. */
  async showDiff(toolCallId: string): Promise<void> {
    const shown = this.shown.get(toolCallId);
    const { oldText, newText } = shown?.request.preview ?? {};
    if (!shown || oldText === undefined || newText === undefined) return;
    const path = shown.request.preview.path ?? shown.request.title;
    if (shown.sides.length === 0) {
      shown.sides = [this.contents.uriFor(path, oldText, APPROVAL_SCHEME), this.contents.uriFor(path, newText, APPROVAL_SCHEME)];
    }
    const name = path.split("/").pop() ?? path;
    await vscode.commands.executeCommand("vscode.diff", shown.sides[0], shown.sides[1],
      `${name}: Pi's ${shown.request.toolName}, waiting for approval`, { preview: true, preserveFocus: true });
  }

  private async open(session: FolderSession, request: ApprovalRequest): Promise<void> {
    this.shown.set(request.toolCallId, { session, request, sides: [], closed: new vscode.CancellationTokenSource() });
    void vscode.commands.executeCommand("setContext", "pi.approvalPending", true);
    await this.showDiff(request.toolCallId);
    if (!this.chatVisible()) await this.notify(request);
  }

  private async notify(request: ApprovalRequest): Promise<void> {
    const what = request.preview.command !== undefined ? `${request.title}: ${request.preview.command}` : request.title;
    const pick = await vscode.window.showWarningMessage(`Pi asks: ${what}`, "Allow", "Allow Always", "Reject", "Open Chat");
    // VS Code cannot take a notification back; one answered after its request ended does nothing.
    if (!this.shown.has(request.toolCallId) || !pick) return;
    if (pick === "Open Chat") this.revealChat();
    else await this.decide(request.toolCallId, pick === "Allow" ? "allow" : pick === "Allow Always" ? "allowAlways" : "reject", undefined, true);
  }

  private close(toolCallId: string): void {
    const shown = this.shown.get(toolCallId);
    if (!shown) return;
    this.shown.delete(toolCallId);
    shown.closed.cancel();
    shown.closed.dispose();
    if (this.shown.size === 0) void vscode.commands.executeCommand("setContext", "pi.approvalPending", false);
    const sides = new Set(shown.sides.map((u) => u.toString()));
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) =>
      t.input instanceof vscode.TabInputTextDiff && sides.has(t.input.modified.toString()));
    if (tabs.length > 0) void vscode.window.tabGroups.close(tabs, true);
  }

  dispose(): void {
    for (const toolCallId of [...this.shown.keys()]) this.close(toolCallId);
  }
}
