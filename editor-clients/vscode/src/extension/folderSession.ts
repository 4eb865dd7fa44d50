// One workspace folder's daemon and conversation: starts pi-rpc on first use, keeps the host's copy
// of the chat (for the status bar, diffs and logs), and restarts a dead daemon into the same session.
import { readFileSync } from "node:fs";
import * as vscode from "vscode";
import { ApprovalQueue } from "../client/approvalQueue";
import { DaemonProcess, type DaemonExit, exitMessage } from "../client/daemonProcess";
import { launchArgs, launchEnv } from "../client/launch";
import type { PendingRequest } from "../client/piClient";
import type { AgentEvent, ApprovalPolicy, ImageInput, InitializeResult, PromptOutcome, SessionStats } from "../protocol";
import { ErrorCodes } from "../protocol";
import type { SendMode, ViewStatus } from "../common/bridge";
import { applyEvent, type ChatState, chatFromMessages, emptyChat } from "../common/chatModel";
import { readTextFile, writeTextFile } from "./editorFiles";
import type { Settings } from "./settings";

export interface SessionListener {
  events(session: FolderSession, events: AgentEvent[]): void;
  reset(session: FolderSession): void;
  status(session: FolderSession): void;
  notice(session: FolderSession, level: "info" | "error", text: string): void;
}

export const NO_MODEL_PROBLEM =
  'No model is configured. Run "Pi: Set API Key" (Anthropic or OpenAI) or set "pi.provider", "pi.model" and "pi.baseUrl" in the settings.';

export class FolderSession implements vscode.Disposable {
  chat: ChatState = emptyChat();
  info?: InitializeResult;
  stats?: SessionStats;
  sessionId?: string;
  thinkingLevel = "";
  problem = "";
  private daemon?: DaemonProcess;
  private starting?: Promise<DaemonProcess>;
  private stopping = false;
  private pendingPrompt?: PendingRequest<PromptOutcome | { queued: string }>;
  /** File contents captured when a write/edit call was complete, before it ran (by card key). */
  readonly snapshots = new Map<string, string | undefined>();
  /** Calls the daemon waits on until the user approves or rejects them. */
  readonly approvals = new ApprovalQueue();
  /** The session's approval policy as the daemon last reported it. */
  approvalPolicy?: ApprovalPolicy;
  /** Told the path of each `fs/writeTextFile` served (a rewind learns which restores reached an editor). */
  readonly editorWrites = new Set<(path: string) => void>();
  /** The launch settings the running daemon was started with (a change restarts it). */
  private launchedWith = "";

  constructor(
    readonly folder: vscode.WorkspaceFolder,
    private readonly settings: () => Promise<Settings>,
    private readonly output: vscode.OutputChannel,
    private readonly listener: SessionListener,
  ) {}

  get pid(): number | undefined {
    return this.daemon?.pid;
  }

  get isRunning(): boolean {
    return this.chat.running;
  }

  status(): ViewStatus {
    const model = this.info?.model;
    return {
      folder: this.folder.name,
      model: model ? `${model.provider}/${model.id}` : "",
      thinkingLevel: this.thinkingLevel,
      scripted: this.info?.scripted ?? false,
      tokens: this.stats?.tokens.total ?? 0,
      cost: this.stats?.cost ?? 0,
      problem: this.problem,
      approvalPolicy: this.approvalPolicy ?? "",
      contextUsage: this.stats?.contextUsage,
    };
  }

  /** The running daemon, started (or restarted into the same session) when needed. */
  async ensure(): Promise<DaemonProcess> {
    if (this.daemon && !this.daemon.client.isClosed) return this.daemon;
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async start(): Promise<DaemonProcess> {
    const settings = await this.settings();
    const cwd = this.folder.uri.fsPath;
    const args = launchArgs(settings.launch, cwd, vscode.workspace.isTrusted);
    this.output.appendLine(`[pi] starting ${settings.launch.command} ${args.join(" ")}`);
    const daemon = new DaemonProcess({
      command: settings.launch.command, args, cwd, env: launchEnv(process.env, settings.apiKeys),
      onStderr: (text) => this.output.append(text),
    });
    this.daemon = daemon;
    this.stopping = false;
    void daemon.exited.then((exit) => this.onExit(daemon, exit, settings.launch.command));
    daemon.client.onEvent((event) => this.onEvent(event));
    daemon.client.onRequest("approval/request", (request, token) => this.approvals.ask(request, token));
    daemon.client.onRequest("fs/readTextFile", ({ path }) => readTextFile(path));
    daemon.client.onRequest("fs/writeTextFile", async ({ path, content }) => {
      const written = await writeTextFile(path, content);
      for (const listener of this.editorWrites) listener(path);
      return written;
    });
    this.launchedWith = JSON.stringify(settings.launch);
    try {
      this.info = await daemon.client.request("initialize", {
        clientInfo: { name: "vscode", version: "0.1.0" },
        capabilities: { approvals: true, files: true },
        ...(settings.approvalPolicy ? { approvalPolicy: settings.approvalPolicy } : {}),
      });
    } catch (error) {
      // One message for a failed start (the caller shows it), not a second one from onExit.
      this.stopping = true;
      const exit = await Promise.race([daemon.exited, new Promise<undefined>((r) => setTimeout(r, 500))]);
      const message = exit ? exitMessage(exit, settings.launch.command) : `Pi daemon failed to initialize: ${errorText(error)}`;
      void daemon.stop();
      this.daemon = undefined;
      this.problem = message;
      this.output.appendLine(`[pi] ${message}`);
      this.listener.status(this);
      throw new Error(message);
    }
    this.problem = this.info.model ? "" : NO_MODEL_PROBLEM;
    this.approvalPolicy = this.info.approvalPolicy;
    // A session with no message yet has no file to load: a fresh one is just as good.
    if (this.sessionId && this.chat.items.length > 0) await this.resume(daemon);
    await this.refreshState(daemon);
    this.listener.status(this);
    return daemon;
  }

  /** After a restart: continue the session the dead daemon had. */
  private async resume(daemon: DaemonProcess): Promise<void> {
    if (!this.sessionId) return;
    try {
      await daemon.client.request("session/load", { sessionId: this.sessionId });
      const { messages } = await daemon.client.request("messages");
      this.chat = chatFromMessages(messages);
      this.listener.reset(this);
      this.listener.notice(this, "info", "The daemon was restarted; the session continues.");
    } catch (error) {
      this.listener.notice(this, "error", `Could not resume session ${this.sessionId}: ${errorText(error)}`);
    }
  }

  private async refreshState(daemon: DaemonProcess): Promise<void> {
    try {
      const state = await daemon.client.request("state");
      this.sessionId = state.sessionId;
      this.thinkingLevel = state.thinkingLevel;
      this.stats = await daemon.client.request("session/stats");
    } catch {
      // The daemon died meanwhile; onExit reports it.
    }
    this.listener.status(this);
  }

  private onExit(daemon: DaemonProcess, exit: DaemonExit, command: string): void {
    if (this.daemon !== daemon) return;
    this.daemon = undefined;
    this.approvals.cancelAll();
    const wasRunning = this.chat.running;
    if (wasRunning) applyEvent(this.chat, { type: "agent_end", messages: [] });
    if (this.stopping) return;
    const message = exitMessage(exit, command);
    this.output.appendLine(`[pi] ${message}`);
    this.problem = exit.spawnError ? message : "";
    this.listener.notice(this, "error", message);
    this.listener.status(this);
    void vscode.window.showErrorMessage(message, "Restart", "Show Log").then((choice) => {
      if (choice === "Restart") void this.ensure().catch((e) => this.reportError(e));
      if (choice === "Show Log") this.output.show(true);
    });
  }

  private onEvent(event: AgentEvent): void {
    applyEvent(this.chat, event);
    if (event.type === "message_update" && event.assistantMessageEvent.type === "toolcall_end") {
      this.snapshot(event.assistantMessageEvent.toolCall);
    }
    this.listener.events(this, [event]);
    if (event.type === "agent_start" || event.type === "tool_execution_start" || event.type === "tool_execution_end" ||
        event.type === "tool_approval_request" || event.type === "tool_approval_end") {
      this.listener.status(this);
    }
    if (event.type === "agent_settled" && this.daemon) void this.refreshState(this.daemon);
  }

  private snapshot(call: { id: string; name: string; arguments?: unknown }): void {
    const cardKey = this.chat.tools[call.id]?.key;
    if ((call.name !== "write" && call.name !== "edit") || !cardKey) return;
    const path = (call.arguments as { path?: unknown } | undefined)?.path;
    if (typeof path !== "string") return;
    const uri = path.startsWith("/") ? vscode.Uri.file(path) : vscode.Uri.joinPath(this.folder.uri, path);
    try {
      this.snapshots.set(cardKey, readFileSync(uri.fsPath, "utf8"));
    } catch {
      this.snapshots.set(cardKey, undefined);
    }
  }

  /** Sends a prompt; during a run, `mode` decides between steering and a queued follow-up. */
  async send(text: string, images: ImageInput[], mode?: SendMode): Promise<void> {
    const daemon = await this.ensure();
    if (this.chat.running) {
      await daemon.client.request("prompt", { message: text, images, streamingBehavior: mode ?? "followUp" });
      return;
    }
    const pending = daemon.client.cancellable("prompt", { message: text, images });
    this.pendingPrompt = pending;
    try {
      const outcome = await pending.result;
      if ("stopReason" in outcome && outcome.stopReason === "error" && outcome.errorMessage) {
        this.problem = this.info?.model ? "" : NO_MODEL_PROBLEM;
        void vscode.window.showErrorMessage(`Pi: ${outcome.errorMessage}`);
      }
    } catch (error) {
      if (isCancelled(error)) return;
      this.reportError(error);
    } finally {
      if (this.pendingPrompt === pending) this.pendingPrompt = undefined;
    }
  }

  async abort(): Promise<void> {
    if (!this.daemon) return;
    await this.daemon.client.request("abort");
  }

  /** Sets the approval policy of the running session (from the next tool call on). */
  async setApprovalPolicy(policy: ApprovalPolicy): Promise<void> {
    const daemon = await this.ensure();
    this.approvalPolicy = (await daemon.client.request("approval/setPolicy", { policy })).policy;
    this.listener.status(this);
  }

  /**
   * After a `pi.*` setting changed: an idle daemon whose launch settings changed stops (the next use
   * starts it again, in the same session); a new approval policy applies to the running one at once.
   */
  async settingsChanged(): Promise<void> {
    if (!this.daemon) return;
    const settings = await this.settings();
    if (JSON.stringify(settings.launch) !== this.launchedWith && !this.isRunning) {
      await this.stop();
      return;
    }
    if (settings.approvalPolicy && settings.approvalPolicy !== this.approvalPolicy) await this.setApprovalPolicy(settings.approvalPolicy);
  }

  async clearQueue(): Promise<void> {
    if (this.daemon) await this.daemon.client.request("clearQueue");
  }

  async newSession(): Promise<void> {
    const daemon = await this.ensure();
    const { sessionId } = await daemon.client.request("session/new");
    this.sessionId = sessionId;
    this.chat = emptyChat();
    this.snapshots.clear();
    this.listener.reset(this);
    await this.refreshState(daemon);
  }

  async loadSession(sessionId: string): Promise<void> {
    const daemon = await this.ensure();
    await daemon.client.request("session/load", { sessionId });
    const { messages } = await daemon.client.request("messages");
    this.sessionId = sessionId;
    this.chat = chatFromMessages(messages);
    this.listener.reset(this);
    await this.refreshState(daemon);
  }

  /** The chat again from the daemon's transcript: after it moved to a fork (a conversation rewind) or compacted. */
  async reloadChat(): Promise<void> {
    const daemon = await this.ensure();
    const { messages } = await daemon.client.request("messages");
    this.chat = chatFromMessages(messages);
    this.snapshots.clear();
    this.listener.reset(this);
    await this.refreshState(daemon);
  }

  /** Has the model summarise the older turns (`compact`), then shows the compacted chat. */
  async compact(): Promise<void> {
    const daemon = await this.ensure();
    await daemon.client.request("compact", {});
    await this.reloadChat();
  }

  async client(): Promise<DaemonProcess["client"]> {
    return (await this.ensure()).client;
  }

  async refresh(): Promise<void> {
    if (this.daemon) await this.refreshState(this.daemon);
  }

  reportError(error: unknown): void {
    const text = errorText(error);
    this.listener.notice(this, "error", text);
    void vscode.window.showErrorMessage(`Pi: ${text}`);
  }

  /** Stops the daemon for good (deactivate, reload, settings change). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.approvals.cancelAll();
    const daemon = this.daemon ?? (await this.starting?.catch(() => undefined));
    this.daemon = undefined;
    if (daemon) await daemon.stop();
  }

  dispose(): void {
    void this.stop();
  }
}

function isCancelled(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === ErrorCodes.cancelled;
}

export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
