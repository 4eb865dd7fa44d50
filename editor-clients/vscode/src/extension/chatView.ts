// The chat webview view: forwards the session's events in batches (deltas merged, one message per
// ~16 ms at most) and turns the view's requests into session calls.
import * as vscode from "vscode";
import type { AgentEvent } from "../protocol";
import type { HostToView, TestAction, ViewToHost } from "../common/bridge";
import { coalesceEvents } from "../common/chatModel";

/** How long events wait to be sent together to the webview. */
const BATCH_MS = 16;

/** The `pi.chatFocused` context, under which the chat's own keys (Alt+Up, Alt+Down, …) are bound. */
function setChatFocused(focused: boolean): Thenable<unknown> {
  return vscode.commands.executeCommand("setContext", "pi.chatFocused", focused);
}

export interface ChatViewHandler {
  (message: ViewToHost): void | Promise<void>;
}

export class ChatViewProvider implements vscode.WebviewViewProvider {
  static readonly viewId = "pi.chat";
  private view?: vscode.WebviewView;
  private pending: AgentEvent[] = [];
  private timer?: NodeJS.Timeout;
  private ready = false;
  private readonly testWaiters = new Map<number, (texts: string[]) => void>();
  private nextTestId = 0;
  private readonly readyWaiters: (() => void)[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly handle: ChatViewHandler,
    /** Called when the view (re)loads: the host sends it the current chat. */
    private readonly onReady: () => void,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = this.html(view.webview, dist);
    view.webview.onDidReceiveMessage((message: ViewToHost) => {
      if (message.type === "ready") {
        this.ready = true;
        this.onReady();
        for (const waiter of this.readyWaiters.splice(0)) waiter();
      } else if (message.type === "focus") {
        // The view's own state, with or without a folder open: no session handles it.
        void setChatFocused(message.focused);
      } else if (message.type === "testResult") {
        this.testWaiters.get(message.id)?.(message.texts);
        this.testWaiters.delete(message.id);
      } else {
        // The handler reports its own errors into the session's chat (one copy, shared keys).
        void Promise.resolve(this.handle(message)).catch((error: unknown) =>
          void vscode.window.showErrorMessage(`Pi: ${error instanceof Error ? error.message : String(error)}`));
      }
    });
    view.onDidDispose(() => {
      this.view = undefined;
      this.ready = false;
      // A view closed with the focus in it sends no blur: its keys must not outlive it.
      void setChatFocused(false);
    });
  }

  /** Whether the chat is on screen. */
  get isVisible(): boolean {
    return this.view?.visible ?? false;
  }

  get isReady(): boolean {
    return this.ready;
  }

  whenReady(): Promise<void> {
    return this.ready ? Promise.resolve() : new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  reveal(): void {
    if (this.view) this.view.show(true);
    else void vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
  }

  events(events: AgentEvent[]): void {
    this.pending.push(...events);
    this.timer ??= setTimeout(() => this.flush(), BATCH_MS);
  }

  post(message: HostToView): void {
    if (message.type !== "events") this.flush();
    if (this.view && this.ready) void this.view.webview.postMessage(message);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    const events = coalesceEvents(this.pending);
    this.pending = [];
    if (this.view && this.ready) void this.view.webview.postMessage({ type: "events", events } satisfies HostToView);
  }

  /**
   * For the in-host tests: the text (a textarea's value) of every element matching `selector`.
   * `true` clicks the first; an action may instead replace its text as typing would (firing
   * `input`) or press a key in it.
   */
  query(selector: string, action?: boolean | TestAction): Promise<string[]> {
    const id = ++this.nextTestId;
    return new Promise((resolve) => {
      this.testWaiters.set(id, resolve);
      this.post({ type: "testQuery", id, selector, action: action === true ? { click: true } : action || undefined });
    });
  }

  private html(webview: vscode.Webview, dist: vscode.Uri): string {
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css"));
    const nonce = Array.from({ length: 24 }, () => Math.floor(Math.random() * 36).toString(36)).join("");
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource} 'unsafe-inline'`,
      `img-src ${webview.cspSource} data:`,
      `font-src ${webview.cspSource} data:`,
      `script-src 'nonce-${nonce}'`,
    ].join("; ");
    return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link href="${style.toString()}" rel="stylesheet"><title>Pi</title></head>
<body><div id="app"></div><script nonce="${nonce}" src="${script.toString()}"></script></body></html>`;
  }
}
