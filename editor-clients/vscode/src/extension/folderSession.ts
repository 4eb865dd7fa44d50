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
import { isAuthError, SET_API_KEY } from "../common/errors";
import { applyHostEvent, DAEMON_TOPIC, type HostEvent } from "../common/hostEvents";
import { readTextFile, writeTextFile } from "./editorFiles";
import { isConnectionGone, StartError, toast } from "./errorSurface";
import type { Settings } from "./settings";

export interface SessionListener {
  events(session: FolderSession, events: AgentEvent[]): void;
  reset(session: FolderSession): void;
  status(session: FolderSession): void;
  /** A change the host made to its chat (a notice, a Stop, the daemon's death), for the view. */
  host(session: FolderSession, event: HostEvent): void;
  /** Whether the user sees this session's chat now (else an error comes as a toast as well). */
  visible(session: FolderSession): boolean;
}

/** The actions of the notice that says the daemon died. */
const DEATH_ACTIONS = [{ label: "Restart", command: "pi.restart" }, { label: "Show Log", command: "pi.showLog" }];

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
    /** Where the folder's session id is kept, so a reloaded window continues that conversation. */
    private readonly memory?: vscode.Memento,
  ) {}

  private get memoryKey(): string {
    return `pi.sessionId:${this.folder.uri.toString()}`;
  }

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
      throw new StartError(message);
    }
    this.problem = this.info.model ? "" : NO_MODEL_PROBLEM;
    this.approvalPolicy = this.info.approvalPolicy;
    if (this.chat.items.some((item) => item.kind === "notice" && item.topic === DAEMON_TOPIC)) {
      this.emit({ type: "dismiss", topic: DAEMON_TOPIC });
    }
    // A session with no message yet has no file to load: a fresh one is just as good.
    if (this.sessionId && this.chat.items.length > 0) await this.resume(daemon);
    else if (!this.sessionId && this.chat.items.length === 0) await this.reopen(daemon);
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
      this.emit({ type: "notice", level: "info", text: "The daemon was restarted; the session continues." });
    } catch (error) {
      this.emit({ type: "notice", level: "error", text: `Could not resume session ${this.sessionId}: ${errorText(error)}` });
    }
  }

  /** After a window reload: the conversation this folder had, from the daemon's session file. */
  private async reopen(daemon: DaemonProcess): Promise<void> {
    const sessionId = this.memory?.get<string>(this.memoryKey);
    if (!sessionId) return;
    try {
      await daemon.client.request("session/load", { sessionId });
      const { messages } = await daemon.client.request("messages");
      this.chat = chatFromMessages(messages);
      this.listener.reset(this);
    } catch (error) {
      // Gone (deleted, or it never had a message to store): a fresh session is what is left.
      this.output.appendLine(`[pi] could not reopen session ${sessionId}: ${errorText(error)}`);
    }
  }

  /** Applies a change of the host's own to the chat, and hands it to the view. */
  private emit(event: HostEvent): void {
    applyHostEvent(this.chat, event);
    this.listener.host(this, event);
  }

  private async refreshState(daemon: DaemonProcess): Promise<void> {
    try {
      const state = await daemon.client.request("state");
      this.sessionId = state.sessionId;
      void this.memory?.update(this.memoryKey, state.sessionId);
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
    // The run is over and what it left unfinished was interrupted (the view hides Stop and Steer).
    this.emit({ type: "daemon_exit" });
    if (this.stopping) {
      this.listener.status(this);
      return;
    }
    const message = exitMessage(exit, command);
    this.output.appendLine(`[pi] ${message}`);
    this.problem = exit.spawnError ? message : "";
    if (!exit.spawnError) this.emit({ type: "notice", level: "error", text: message, topic: DAEMON_TOPIC, actions: DEATH_ACTIONS });
    this.listener.status(this);
    // The chat says it (the banner or the notice, with its buttons); a toast only when it is hidden.
    if (!this.listener.visible(this)) toast("error", message, exit.spawnError ? [] : DEATH_ACTIONS);
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
    let daemon: DaemonProcess;
    try {
      daemon = await this.ensure();
    } catch (error) {
      // The words stay in the chat; the banner says why the daemon is not there.
      this.emit({ type: "prompt_failed", text, images: images.length });
      this.reportError(error);
      return;
    }
    if (this.chat.running) {
      try {
        await daemon.client.request("prompt", { message: text, images, streamingBehavior: mode ?? "followUp" });
      } catch (error) {
        if (!isConnectionGone(error, daemon.client.isClosed)) this.reportError(error);
      }
      return;
    }
    let echoed = false;
    const echo = daemon.client.onEvent((event) => {
      if (event.type === "message_start" && event.message.role === "user") echoed = true;
    });
    const pending = daemon.client.cancellable("prompt", { message: text, images });
    this.pendingPrompt = pending;
    try {
      const outcome = await pending.result;
      // The chat shows the model's error in the answer (with "Set API Key" for a rejected key).
      if ("stopReason" in outcome && outcome.stopReason === "error" && outcome.errorMessage && !this.listener.visible(this)) {
        toast("error", `Pi: ${outcome.errorMessage}`, isAuthError(outcome.errorMessage) ? [SET_API_KEY] : []);
      }
    } catch (error) {
      if (isCancelled(error)) return;
      // A daemon that died mid-run is reported once, by its exit.
      if (isConnectionGone(error, daemon.client.isClosed)) return;
      if (!echoed) this.emit({ type: "prompt_failed", text, images: images.length });
      if (isNoModel(error)) {
        this.problem = NO_MODEL_PROBLEM;
        this.listener.status(this);
        if (!this.listener.visible(this)) toast("error", NO_MODEL_PROBLEM, [SET_API_KEY]);
        return;
      }
      this.reportError(error);
    } finally {
      echo.dispose();
      if (this.pendingPrompt === pending) this.pendingPrompt = undefined;
    }
  }

  async abort(): Promise<void> {
    if (!this.daemon) return;
    // Calls that end from here on were stopped by the user: their cards say "aborted".
    if (this.chat.running) this.emit({ type: "stop_requested" });
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

  /**
   * Shows an error once: a failed start is the banner's (`problem`), anything else a notice in the
   * chat; a toast as well only when the chat is not on screen.
   */
  reportError(error: unknown): void {
    const text = errorText(error);
    const actions = isAuthError(text) ? [SET_API_KEY] : [];
    if (!(error instanceof StartError)) this.emit({ type: "notice", level: "error", text, actions });
    if (!this.listener.visible(this)) toast("error", `Pi: ${text}`, actions);
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

function isNoModel(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === ErrorCodes.noModel;
}

function isCancelled(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === ErrorCodes.cancelled;
}

export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
