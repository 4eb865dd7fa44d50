// Entry point: one FolderSession per workspace folder, the chat view, the status bar and commands.
import * as vscode from "vscode";
import type { AgentEvent, ImageInput } from "../protocol";
import type { SendMode, ViewToHost } from "../common/bridge";
import { APPROVAL_SCHEME, ApprovalPrompts } from "./approvalPrompts";
import { ChatViewProvider } from "./chatView";
import { RewindController } from "./checkpoints";
import { nameSession, pickApprovalPolicy, pickModel, pickSession, pickThinking, pickTools, setApiKey } from "./commands";
import { BEFORE_SCHEME, BeforeContentProvider, openDiff, openLog } from "./documents";
import { StartError } from "./errorSurface";
import { errorText, FolderSession, type SessionListener } from "./folderSession";
import { keyboardCommands } from "./keyboard";
import { expandPrompt, mentionCandidates } from "./mentions";
import { selectionContext } from "./selectionContext";
import { readSettings } from "./settings";
import { PiStatusBar } from "./statusBar";
import { TerminalOutput } from "./terminalOutput";

/** What the extension exports, for the in-host tests (and other extensions). */
export interface PiApi {
  session(folder?: vscode.WorkspaceFolder): FolderSession | undefined;
  chatView: ChatViewProvider;
  statusText(): string;
  /** Every agent event of every folder's daemon, as the host receives it. */
  onDidReceiveEvent: vscode.Event<AgentEvent>;
}

const sessions = new Map<string, FolderSession>();

export function activate(context: vscode.ExtensionContext): PiApi {
  const output = vscode.window.createOutputChannel("Pi");
  const statusBar = new PiStatusBar();
  const terminal = new TerminalOutput();
  const before = new BeforeContentProvider();
  let shown: FolderSession | undefined;
  const eventEmitter = new vscode.EventEmitter<AgentEvent>();
  const prompts = new ApprovalPrompts(before, () => chatView.isVisible, () => chatView.reveal());

  const currentFolder = (): vscode.WorkspaceFolder | undefined => {
    const uri = vscode.window.activeTextEditor?.document.uri;
    return (uri && vscode.workspace.getWorkspaceFolder(uri)) ?? vscode.workspace.workspaceFolders?.[0];
  };
  const sessionFor = (folder = currentFolder()): FolderSession | undefined => {
    if (!folder) return undefined;
    let session = sessions.get(folder.uri.toString());
    if (!session) {
      session = new FolderSession(folder, () => readSettings(context.secrets, folder.uri), output, listener, context.workspaceState);
      sessions.set(folder.uri.toString(), session);
      context.subscriptions.push(prompts.attach(session));
    }
    return session;
  };
  const requireSession = (): FolderSession => {
    const session = sessionFor();
    if (!session) throw new Error("Open a folder first: Pi works in a workspace folder.");
    if (shown !== session) show(session);
    return session;
  };

  const listener: SessionListener = {
    events: (session, events) => {
      if (session === shown) chatView.events(events);
      for (const event of events) eventEmitter.fire(event);
    },
    reset: (session) => {
      if (session === shown) replay(session);
    },
    status: (session) => {
      if (session !== shown) return;
      chatView.post({ type: "status", status: session.status() });
      statusBar.update(session);
    },
    host: (session, event) => {
      if (session === shown) chatView.post({ type: "host", event });
    },
    visible: (session) => session === shown && chatView.isVisible,
  };

  const replay = (session: FolderSession): void => {
    chatView.post({ type: "restore", chat: session.chat });
    chatView.post({ type: "status", status: session.status() });
  };
  const show = (session: FolderSession): void => {
    shown = session;
    replay(session);
    statusBar.update(session);
  };

  const send = async (text: string, images: ImageInput[] = [], mode?: SendMode): Promise<void> => {
    const session = requireSession();
    let behaviour = mode;
    if (session.isRunning && !behaviour) {
      const settings = await readSettings(context.secrets, session.folder.uri);
      if (settings.followUpMode !== "ask") behaviour = settings.followUpMode;
      else {
        const pick = await vscode.window.showQuickPick(
          [{ label: "Steer", description: "deliver after the current tool batch", mode: "steer" as const },
           { label: "Follow up", description: "queue for when the agent would stop", mode: "followUp" as const }],
          { title: "Pi is still working" });
        if (!pick) return;
        behaviour = pick.mode;
      }
    }
    await session.send(text, images, behaviour);
  };

  const onViewMessage = async (message: ViewToHost): Promise<void> => {
    const session = requireSession();
    try {
      await handleViewMessage(session, message);
    } catch (error) {
      // Into the host's chat too, so the view's copy and the host's keep the same items.
      session.reportError(error);
    }
  };

  const handleViewMessage = async (session: FolderSession, message: ViewToHost): Promise<void> => {
    switch (message.type) {
      case "send":
        rewinds.close();
        return send(await expandPrompt(session.folder, message.text, message.mentions ?? [], terminal), message.images, message.mode);
      case "rewindAsk": return rewinds.ask(session, message.key);
      case "resend": return rewinds.resend(session, message.key, message.text);
      case "rewind": return rewinds.choose(message.restore);
      case "rewindForce": return rewinds.force();
      case "rewindSkip": return rewinds.skip();
      case "rewindCancel": return rewinds.close();
      case "rewindDiff": return rewinds.diff(message.path, message.unsaved);
      case "abort": return session.abort();
      case "clearQueue": return session.clearQueue();
      case "openLog": return openLog(session, message.cardKey);
      case "openDiff": return openDiff(session, message.cardKey, before);
      case "approve": return prompts.decide(message.toolCallId, message.outcome, message.reason);
      case "showApproval": return prompts.showDiff(message.toolCallId);
      case "copy": return vscode.env.clipboard.writeText(message.text);
      case "insertCode": {
        const editor = vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme !== "output") ?? vscode.window.activeTextEditor;
        if (!editor) throw new Error("No editor to insert into.");
        await editor.edit((edit) => edit.replace(editor.selection, message.code));
        return;
      }
      case "command": {
        await vscode.commands.executeCommand(message.command);
        return;
      }
      case "mentions":
        chatView.post({ type: "mentions", requestId: message.requestId, items: await mentionCandidates(session.folder, message.query, terminal) });
        return;
      default:
        return;
    }
  };

  const chatView = new ChatViewProvider(context.extensionUri, onViewMessage, () => {
    const session = shown ?? sessionFor();
    if (!session) return;
    show(session);
    // Opening the chat is a use: start the daemon, so a missing pi-rpc or model shows at once.
    void session.ensure().catch((error: unknown) => session.reportError(error));
  });

  const rewinds = new RewindController(chatView, before);

  const guarded = <A extends unknown[]>(fn: (...args: A) => unknown) => async (...args: A) => {
    try {
      await fn(...args);
    } catch (error) {
      // A daemon that cannot start is the chat's banner; a toast only when the chat is hidden.
      if (error instanceof StartError && chatView.isVisible) return;
      void vscode.window.showErrorMessage(`Pi: ${errorText(error)}`);
    }
  };

  /** The diff editor's title actions: they act on the call whose diff is shown. */
  const decideFromEditor = (outcome: "allow" | "allowAlways" | "reject") => guarded(async (uri?: unknown) => {
    const shown = prompts.requestFor(uri instanceof vscode.Uri ? uri : undefined);
    if (!shown) throw new Error("No tool call is waiting for approval.");
    await prompts.decide(shown.request.toolCallId, outcome, undefined, outcome === "reject");
  });

  context.subscriptions.push(
    output, statusBar, terminal, eventEmitter, prompts,
    ...keyboardCommands(chatView, prompts, requireSession).map(([id, run]) => vscode.commands.registerCommand(id, guarded(run))),
    vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, before),
    vscode.workspace.registerTextDocumentContentProvider(APPROVAL_SCHEME, before),
    vscode.commands.registerCommand("pi.approvalPolicy", guarded(() => pickApprovalPolicy(requireSession()))),
    vscode.commands.registerCommand("pi.approval.allow", decideFromEditor("allow")),
    vscode.commands.registerCommand("pi.approval.allowAlways", decideFromEditor("allowAlways")),
    vscode.commands.registerCommand("pi.approval.reject", decideFromEditor("reject")),
    vscode.commands.registerCommand("pi.approval.applySelected", decideFromEditor("allow")),
    // From a key or the title bar: the hunk under the cursor of the diff's "after" side; from a
    // caller (the tests, a card): `{toolCallId, index}`.
    vscode.commands.registerCommand("pi.approval.toggleHunk", guarded((at?: unknown) => {
      const named = typeof at === "object" && at !== null && !(at instanceof vscode.Uri) ? at as { toolCallId?: string; index?: number } : {};
      const editor = vscode.window.activeTextEditor;
      if (!prompts.toggleHunk({ ...named, editor: named.toolCallId ? undefined : editor })) {
        throw new Error("Put the cursor on a hunk in the \"after\" side of an approval's diff first.");
      }
    })),
    vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, chatView, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand("pi.openChat", () => chatView.reveal()),
    vscode.commands.registerCommand("pi.prompt", guarded(async () => {
      const text = await vscode.window.showInputBox({ title: "Ask Pi", prompt: "What should Pi do?" });
      if (!text) return;
      chatView.reveal();
      await send(text);
    })),
    vscode.commands.registerCommand("pi.askAboutSelection", guarded(() => {
      const editor = vscode.window.activeTextEditor;
      if (!editor || editor.selection.isEmpty) throw new Error("Select some code first.");
      const text = selectionContext(vscode.workspace.asRelativePath(editor.document.uri, false), editor.document.languageId,
        editor.document.getText(editor.selection), editor.selection);
      requireSession();
      chatView.reveal();
      void chatView.whenReady().then(() => chatView.post({ type: "addContext", text }));
    })),
    vscode.commands.registerCommand("pi.abort", guarded(() => requireSession().abort())),
    vscode.commands.registerCommand("pi.newSession", guarded(() => requireSession().newSession())),
    vscode.commands.registerCommand("pi.sessions", guarded(() => pickSession(requireSession()))),
    vscode.commands.registerCommand("pi.nameSession", guarded((name?: string) => nameSession(requireSession(), name))),
    vscode.commands.registerCommand("pi.compact", guarded(() => requireSession().compact())),
    vscode.commands.registerCommand("pi.showTools", guarded(() => pickTools(requireSession()))),
    vscode.commands.registerCommand("pi.selectModel", guarded(() => pickModel(requireSession()))),
    vscode.commands.registerCommand("pi.selectThinking", guarded(() => pickThinking(requireSession()))),
    vscode.commands.registerCommand("pi.showLog", () => output.show(true)),
    vscode.commands.registerCommand("pi.restart", guarded(async () => {
      const session = requireSession();
      await session.stop();
      await session.ensure();
    })),
    vscode.commands.registerCommand("pi.setApiKey", guarded(async () => {
      if (!(await setApiKey(context.secrets))) return;
      // Keys reach a daemon through its environment: idle daemons restart (into the same session).
      for (const session of sessions.values()) {
        if (session.isRunning || session.pid === undefined) continue;
        await session.stop();
        await session.ensure();
      }
    })),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration("pi")) return;
      for (const session of sessions.values()) void session.settingsChanged().catch((error: unknown) => session.reportError(error));
    }),
    vscode.workspace.onDidChangeWorkspaceFolders((event) => {
      for (const folder of event.removed) {
        const key = folder.uri.toString();
        void sessions.get(key)?.stop();
        sessions.delete(key);
      }
    }),
    vscode.window.onDidChangeActiveTextEditor(() => {
      const session = sessionFor();
      if (session && session !== shown) show(session);
    }),
  );
  return { session: (folder) => sessionFor(folder), chatView, statusText: () => statusBar.text, onDidReceiveEvent: eventEmitter.event };
}

export async function deactivate(): Promise<void> {
  await Promise.all([...sessions.values()].map((session) => session.stop()));
  sessions.clear();
}
