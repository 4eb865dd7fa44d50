// Runs inside the real extension host (code-server), against the installed .vsix and the real
// daemon on test/host/script.json. Each test drives the extension as a user would (commands, the
// chat view's buttons) and checks what the user sees: the webview's DOM, editors, processes.
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import * as vscode from "vscode";
import { checkpointTests } from "./checkpointTests";
import { hunkTests } from "./hunkTests";
import { contextTests } from "./contextTests";

interface Session {
  pid?: number;
  approvalPolicy?: string;
  approvals: { pending: { toolCallId: string }[] };
  send(text: string, images: unknown[], mode?: "steer" | "followUp"): Promise<void>;
  sessionId?: string;
  chat: { running: boolean; activity: { kind: string; name?: string }; items: { kind: string; text?: string }[];
    tools: Record<string, { name: string; status: string; output: string }>;
    cards: Record<string, { name: string; status: string; output: string }> };
}
interface PiApi {
  session(): Session | undefined;
  chatView: {
    query(selector: string, action?: boolean | { type: string } | { key: string }): Promise<string[]>;
    whenReady(): Promise<void>;
    post(message: unknown): void;
  };
  statusText(): string;
  onDidReceiveEvent: vscode.Event<{ type: string }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
}

const folder = () => vscode.workspace.workspaceFolders![0].uri.fsPath;
const farewellPath = () => join(folder(), "src", "farewell.py");
const farewellOnDisk = () => readFileSync(farewellPath(), "utf8");

/** The diff editor tabs of calls waiting for approval. */
function approvalDiffs(): vscode.TabInputTextDiff[] {
  return vscode.window.tabGroups.all.flatMap((g) => g.tabs).map((t) => t.input)
    .filter((i): i is vscode.TabInputTextDiff => i instanceof vscode.TabInputTextDiff && i.modified.scheme === "pi-approval");
}

/** Sends `text` and waits until its tool call asks: the card's buttons, the diff, the status bar. */
async function sendAndWaitForApproval(text: string): Promise<void> {
  await send(text);
  await until("the card's approval buttons", async () => (await api.chatView.query(".tool-approval .approve-allow")).length === 1)
    .catch((error: Error) => {
      const session = api.session()!;
      const cards = Object.values(session.chat.tools).slice(-2).map((t) => `${t.name}:${t.status}:${t.output.slice(0, 200)}`);
      throw new Error(`${error.message} (status ${api.statusText()}; activity ${JSON.stringify(session.chat.activity)}; ` +
        `pending ${JSON.stringify(session.approvals.pending)}; policy ${session.approvalPolicy}; cards ${cards.join(" | ")})`);
    });
  await until("the status bar to say so", () => api.statusText().includes("waiting for approval"));
}

async function setPolicy(policy: string): Promise<void> {
  await vscode.workspace.getConfiguration("pi").update("approvalPolicy", policy, vscode.ConfigurationTarget.Workspace);
  await until(`the session's policy to be ${policy}`, () => api.session()!.approvalPolicy === policy);
}

async function idle(): Promise<void> {
  await until("the run to end", () => !api.session()!.chat.running, 30_000);
}

/** Sends `text` and waits for its run to end (not just for the session to look idle before it starts). */
async function runPrompt(text: string): Promise<void> {
  const asked = () => api.session()!.chat.items.filter((i) => i.kind === "user" && i.text === text).length;
  const before = asked();
  await send(text);
  await until(`the run of "${text}" to end`, () => asked() > before && !api.session()!.chat.running, 30_000);
}
let api: PiApi;

/** Types `text` into the chat view's input and presses its Send button. */
async function send(text: string): Promise<void> {
  await vscode.commands.executeCommand("pi.openChat");
  await api.chatView.whenReady();
  api.chatView.post({ type: "addContext", text });
  await api.chatView.query("button.send", true);
}

const tests: [string, () => Promise<void>][] = [
  ["a prompt streams into the chat view, and the status bar follows the run", async () => {
    await vscode.commands.executeCommand("pi.openChat");
    await send("hello");
    const statuses = new Set<string>();
    await until("the answer in the view", async () => {
      statuses.add(api.statusText());
      return (await api.chatView.query(".msg.assistant .markdown")).join("").includes("I am the scripted model.");
    });
    assert.ok([...statuses].some((s) => s.includes("streaming")), `status bar showed streaming: ${[...statuses].join(" | ")}`);
    assert.deepEqual(await api.chatView.query(".msg.user .bubble"), ["hello"]);
    assert.match((await api.chatView.query(".msg.assistant strong")).join(), /scripted/);
  }],

  ["read and bash cards show live status and output; a truncated result opens its full log", async () => {
    const session = api.session()!;
    await send("tour");
    await until("the bash card running with its live output", async () => {
      const status = await api.chatView.query(".tool[data-tool=bash] .tool-status");
      const live = (await api.chatView.query(".tool[data-tool=bash] .tool-output.live")).join("");
      return status[0] === "running" && live.includes("line 3000") && api.statusText().includes("running bash");
    });
    await until("the run to finish", () => !session.chat.running, 30_000);
    assert.notEqual((await api.chatView.query(".tool[data-tool=read] .tool-status"))[0], "failed");
    assert.ok((await api.chatView.query(".tool[data-tool=read] .tool-summary")).includes("README.md"));
    const notice = await api.chatView.query(".tool[data-tool=bash] .tool-notice");
    assert.match(notice[0] ?? "", /\[Showing lines 1001-3000 of 3000\. Full output: \S+\.log\]/);
    assert.match((await api.chatView.query(".tool[data-tool=bash] .tool-output")).join(""), /line 3000/);
    await api.chatView.query(".tool[data-tool=bash] .open-log", true);
    const editor = await until("the log editor", () => (vscode.window.activeTextEditor?.document.uri.fsPath.endsWith(".log") ? vscode.window.activeTextEditor : undefined));
    assert.equal(editor.document.lineAt(0).text, "line 1");
    assert.equal(editor.document.getText().trimEnd().split("\n").length, 3000);
  }],

  ["an edit card opens a diff of the file before and after", async () => {
    await api.chatView.query(".tool[data-tool=edit] .open-diff", true);
    const tab = await until("a diff tab", () => vscode.window.tabGroups.all.flatMap((g) => g.tabs)
      .find((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.fsPath.endsWith("greet.py")));
    const input = tab.input as vscode.TabInputTextDiff;
    const original = await vscode.workspace.openTextDocument(input.original);
    assert.match(original.getText(), /Helo, \{name\}/);
    assert.match(readFileSync(join(folder(), "src", "greet.py"), "utf8"), /Hello, \{name\}/);
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
  }],

  ["Stop during `sleep 30` ends the run at once and the process is gone", async () => {
    const session = api.session()!;
    const pidFile = join(folder(), "slow.pid");
    await send("slow");
    const pid = await until("the sleep to start", () => (existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").trim()) : 0));
    assert.ok(alive(pid));
    await until("the Stop button", async () => (await api.chatView.query("body.running .stop")).length > 0);
    // While it runs, a follow-up is queued, shown above the input, and cleared with one click.
    void session.send("afterwards, summarise", [], "followUp");
    await until("the queued follow-up in the view", async () => (await api.chatView.query(".queue .queue-item")).join("").includes("afterwards, summarise"));
    await api.chatView.query(".queue .clear-queue", true);
    await until("the queue to be cleared", async () => (await api.chatView.query(".queue.hidden")).length === 1);
    await api.chatView.query(".stop", true);
    await until("the run to end", () => !session.chat.running, 5000);
    await until("the sleep process to be gone", () => !alive(pid), 5000);
    // The user stopped it: the card says so, not that the command failed.
    await until("the card to say aborted", async () => (await api.chatView.query(".tool[data-tool=bash] .tool-status")).pop() === "aborted", 5000);
  }],

  ["a daemon killed during a command: the card says interrupted, Stop goes, one clear notice; the restart continues the session", async () => {
    const session = api.session()!;
    const pidFile = join(folder(), "slow.pid");
    rmSync(pidFile, { force: true });
    await send("slow");
    const sleepPid = await until("the sleep to start", () => (existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").trim()) : 0));
    await until("the Stop button", async () => (await api.chatView.query("body.running .stop")).length > 0);
    const pid = session.pid!;
    const sessionId = session.sessionId;
    assert.ok(sessionId);
    process.kill(pid, "SIGKILL");
    await until("the death notice in the view", async () => (await api.chatView.query(".notice.error")).join("").includes("killed by SIGKILL"));
    try {
      await until("the card to say interrupted", async () => (await api.chatView.query(".tool[data-tool=bash] .tool-status")).pop() === "interrupted", 5000);
      assert.deepEqual(await api.chatView.query("body.running"), [], "Stop and Steer go with the run");
      const notices = await api.chatView.query(".notice");
      assert.ok(!notices.some((n) => /Pending response|connection got disposed/.test(n)), notices.join(" | "));
      assert.equal(notices.filter((n) => n.includes("killed by SIGKILL")).length, 1, notices.join(" | "));
      assert.deepEqual(await api.chatView.query(".notice.error .notice-action"), ["Restart", "Show Log"]);
    } finally {
      if (alive(sleepPid)) process.kill(sleepPid, "SIGKILL");
    }
    await send("after the restart");
    await until("the answer after the restart", async () =>
      (await api.chatView.query(".msg.user .bubble")).includes("after the restart") && !session.chat.running && session.pid !== undefined);
    assert.notEqual(session.pid, pid);
    assert.equal(session.sessionId, sessionId);
    // The resumed chat still holds the earlier conversation; the death notice went with the death.
    assert.ok((await api.chatView.query(".msg.user .bubble")).includes("tour"));
    assert.doesNotMatch((await api.chatView.query(".notice")).join(" | "), /killed by SIGKILL/);
  }],

  ["after a notice, Open full log and Open diff open what the new cards show", async () => {
    assert.ok((await api.chatView.query(".notice")).length > 0, "the chat holds a notice (the restart's)");
    await runPrompt("log and write");
    // The bash card is in the third assistant message from the end, the write card in the second.
    const card = (n: number) => `.messages > :nth-last-child(${n} of .msg.assistant)`;
    assert.match((await api.chatView.query(`${card(3)} .tool-summary`)).join(), /row/);
    await api.chatView.query(`${card(3)} .open-log`, true);
    const editor = await until("the log editor", () => {
      const active = vscode.window.activeTextEditor;
      return active?.document.uri.fsPath.endsWith(".log") && active.document.lineAt(0).text === "row 1" ? active : undefined;
    });
    assert.equal(editor.document.getText().trimEnd().split("\n").length, 3000);
    await api.chatView.query(`${card(2)} .open-diff`, true);
    await until("the write's diff tab", () => vscode.window.tabGroups.all.flatMap((g) => g.tabs)
      .find((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.fsPath.endsWith("notes.md")));
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
    // The answer's Markdown table is drawn as a table.
    assert.deepEqual(await api.chatView.query(`${card(1)} .table-wrap th`), ["file", "lines"]);
  }],

  ["Ask About Selection puts the selection, its file and line range in the input", async () => {
    const document = await vscode.workspace.openTextDocument(join(folder(), "src", "greet.py"));
    const editor = await vscode.window.showTextDocument(document);
    editor.selection = new vscode.Selection(3, 0, 4, 100);
    await vscode.commands.executeCommand("pi.askAboutSelection");
    const [value] = await until("the input to hold the selection", async () => {
      const texts = await api.chatView.query("textarea.input");
      return texts[0]?.includes("def greet") ? texts : undefined;
    });
    assert.match(value, /^@src\/greet\.py#L4-L5\n```python\ndef greet/);
    // Two whole lines, selected as the mouse or Shift+Down does: the end is the next line's start.
    await api.chatView.query("textarea.input", { type: "" });
    editor.selection = new vscode.Selection(3, 0, 5, 0);
    await vscode.commands.executeCommand("pi.askAboutSelection");
    const [lines] = await until("the input to hold the whole lines", async () => {
      const texts = await api.chatView.query("textarea.input");
      return texts[0]?.includes("def greet") ? texts : undefined;
    });
    assert.match(lines, /^@src\/greet\.py#L4-L5\n/);
    await api.chatView.query("textarea.input", { type: "" });
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
  }],

  ["typing @ offers workspace files, and Enter puts the chosen one in the message", async () => {
    await api.chatView.query("textarea.input", { type: "explain @gre" });
    const offered = await until("the file suggestions", async () => {
      const rows = await api.chatView.query(".mentions .mention[data-kind=file]");
      return rows.length > 0 ? rows : undefined;
    });
    assert.deepEqual(offered, ["src/greet.py"]);
    await api.chatView.query("textarea.input", { key: "Enter" });
    const [value] = await api.chatView.query("textarea.input");
    assert.equal(value, "explain @src/greet.py ");
    assert.deepEqual(await api.chatView.query(".mentions.hidden"), [""]);
    await api.chatView.query("textarea.input", { type: "" });
  }],

  ["a screenshot of the chat after a tool session", async () => {
    const out = process.env.PI_VSCODE_TEST_OUT;
    if (!out) return;
    const path = join(out, "chat-in-host.png");
    console.log(`@@screenshot ${path}`);
    await until("the screenshot", () => existsSync(`${path}.done`), 15_000);
  }],

  ...contextTests({
    query: (selector, action) => api.chatView.query(selector, action), until, onDidReceiveEvent: (listener) => api.onDidReceiveEvent(listener),
    session: () => api.session()!, setPolicy, folder,
  }),

  ["with approvals on, an edit waits with its diff and runs when allowed from the card", async () => {
    await setPolicy("ask");
    await sendAndWaitForApproval("edit farewell bye");
    const [diff] = await until("the approval's diff editor", () => (approvalDiffs().length === 1 ? approvalDiffs() : undefined));
    assert.match((await vscode.workspace.openTextDocument(diff.original)).getText(), /Bye, \{name\}/);
    assert.match((await vscode.workspace.openTextDocument(diff.modified)).getText(), /Goodbye, \{name\}/);
    assert.match((await api.chatView.query(".tool-approval .tool-status")).join(), /waiting for approval/);
    assert.match((await api.chatView.query(".tool-approval .approval-patch")).join(), /\+ {4}return f"Goodbye/);
    assert.match(farewellOnDisk(), /Bye, \{name\}/, "nothing is written while the user decides");
    await sleep(1500); // the user reads the diff (what the duration must leave out, not a wait for an event)
    await api.chatView.query(".tool-approval .approve-allow", true);
    await idle();
    assert.match(farewellOnDisk(), /Goodbye, \{name\}/);
    const duration = (await api.chatView.query(".tool[data-tool=edit] .tool-status")).pop() ?? "";
    assert.match(duration, /^0\.\d\ds$/, `the edit's duration is its own work, not the wait for approval: ${duration}`);
    await until("the diff editor to close", () => approvalDiffs().length === 0);
    assert.doesNotMatch(api.statusText(), /waiting for approval/);
    assert.equal((await api.chatView.query(".tool-approval")).length, 0);
  }],

  ["reject leaves the file untouched and the model gets the reason typed in the card", async () => {
    await sendAndWaitForApproval("edit farewell goodbye");
    await api.chatView.query(".tool-approval .approval-reason", { type: "keep it short, it is a fixture" });
    await api.chatView.query(".tool-approval .approve-reject", true);
    await idle();
    const cards = await api.chatView.query(".tool[data-tool=edit]");
    assert.match(cards.pop() ?? "", /The user rejected this edit call: keep it short, it is a fixture/);
    assert.match(farewellOnDisk(), /Goodbye, \{name\}/);
    await until("the diff editor to close", () => approvalDiffs().length === 0);
  }],

  ["Allow Always stops asking for that command", async () => {
    const asked: string[] = [];
    const listening = api.onDidReceiveEvent((e) => e.type === "tool_approval_request" && asked.push(e.type));
    try {
      await sendAndWaitForApproval("run tests");
      assert.match((await api.chatView.query(".tool-approval .approval-command")).join(), /echo tests passed/);
      await api.chatView.query(".tool-approval .approve-always", true);
      await idle();
      await runPrompt("run tests");
      assert.equal(asked.length, 1, "asked once, not for the second run");
      const outputs = await api.chatView.query(".tool[data-tool=bash] .tool-output");
      assert.ok(outputs.slice(-2).every((o) => o.includes("tests passed")), outputs.slice(-2).join(" | "));
      // A restarted daemon remembers it too.
      const session = api.session()!;
      const pid = session.pid!;
      process.kill(pid, "SIGKILL");
      await until("the daemon to be gone", () => session.pid !== pid);
      await runPrompt("run tests");
      assert.notEqual(session.pid, pid);
      assert.equal(asked.length, 1, "not asked after the restart either");
    } finally {
      listening.dispose();
    }
  }],

  ["Stop while a call waits closes its card buttons, diff and status, and changes nothing", async () => {
    await sendAndWaitForApproval("edit farewell goodbye");
    await until("the approval's diff editor", () => approvalDiffs().length === 1);
    await api.chatView.query(".stop", true);
    await idle();
    await until("the diff editor to close", () => approvalDiffs().length === 0, 5000);
    await until("the card to stop asking", async () => (await api.chatView.query(".tool-approval")).length === 0, 5000);
    assert.deepEqual(api.session()!.approvals.pending, []);
    assert.doesNotMatch(api.statusText(), /waiting for approval/);
    assert.match(farewellOnDisk(), /Goodbye, \{name\}/);
  }],

  ["read returns an open editor's unsaved text", async () => {
    const document = await vscode.workspace.openTextDocument(farewellPath());
    const editor = await vscode.window.showTextDocument(document);
    await editor.edit((e) => e.insert(new vscode.Position(0, 0), "# unsaved note\n"));
    assert.ok(document.isDirty);
    await runPrompt("read farewell");
    await until("the read card with the editor's text", async () =>
      ((await api.chatView.query(".tool[data-tool=read]")).pop() ?? "").includes("# unsaved note"), 5000);
    assert.match(readFileSync(farewellPath(), "utf8"), /^def farewell/, "the note is only in the editor");
  }],

  ["an approved edit lands in the unsaved editor (not on disk) and undo reverts just that edit", async () => {
    const document = await vscode.workspace.openTextDocument(farewellPath());
    await sendAndWaitForApproval("edit farewell goodbye");
    await api.chatView.query(".tool-approval .approve-allow", true);
    await idle();
    assert.match(document.getText(), /^# unsaved note\n[\s\S]*See you, \{name\}/);
    assert.ok(document.isDirty, "a document with the user's unsaved changes is not saved for them");
    assert.doesNotMatch(farewellOnDisk(), /See you|unsaved note/);
    await vscode.window.showTextDocument(document);
    await vscode.commands.executeCommand("undo");
    await until("undo to revert the agent's edit", () => document.getText().includes("Goodbye, {name}"));
    assert.match(document.getText(), /^# unsaved note\n/, "the user's own change stays");
  }],

  ["a clean open document is saved after the agent's edit (allowed from the diff editor's title bar)", async () => {
    const document = await vscode.workspace.openTextDocument(farewellPath());
    await vscode.window.showTextDocument(document);
    await vscode.commands.executeCommand("workbench.action.files.revert");
    await until("the document to be clean", () => !document.isDirty);
    await sendAndWaitForApproval("edit farewell goodbye");
    await until("the approval's diff editor", () => approvalDiffs().length === 1);
    await vscode.commands.executeCommand("pi.approval.allow", approvalDiffs()[0].modified);
    await idle();
    assert.match(document.getText(), /See you, \{name\}/);
    assert.ok(!document.isDirty);
    assert.match(farewellOnDisk(), /See you, \{name\}/);
    await vscode.commands.executeCommand("workbench.action.closeAllEditors");
    await setPolicy("auto");
  }],

  ...hunkTests({
    query: (selector, action) => api.chatView.query(selector, action), until, sendAndWaitForApproval, setPolicy, idle, approvalDiffs, folder,
  }),

  ...checkpointTests({
    session: () => api.session()!, query: (selector, action) => api.chatView.query(selector, action), until, runPrompt, folder,
  }),

  ["when pi-rpc cannot be found, the chat says so and how to install it", async () => {
    const config = vscode.workspace.getConfiguration("pi");
    const previous = config.inspect<string>("daemon.command")?.globalValue;
    await config.update("daemon.command", "/nonexistent/pi-rpc", vscode.ConfigurationTarget.Global);
    try {
      await until("the daemon to stop after the settings change", () => api.session()!.pid === undefined);
      await vscode.commands.executeCommand("pi.newSession");
      const [problem] = await until("the problem banner", async () => {
        const texts = await api.chatView.query(".problem:not(.hidden)");
        return texts.length > 0 ? texts : undefined;
      });
      assert.match(problem, /"\/nonexistent\/pi-rpc" was not found/);
      assert.match(problem, /checkout of the pi-rpc repository/);
      assert.match(api.statusText(), /warning/);
      // Said once, in the banner: no card repeating it.
      await send("are you there?");
      await until("the prompt to stay in the chat", async () => (await api.chatView.query(".msg.user .bubble")).includes("are you there?"));
      assert.deepEqual((await api.chatView.query(".notice")).filter((n) => n.includes("was not found")), []);
    } finally {
      await config.update("daemon.command", previous, vscode.ConfigurationTarget.Global);
    }
    // Once the daemon runs, the banner goes.
    await api.session()!.send("hello again", []);
    await until("the banner to go", async () => (await api.chatView.query(".problem.hidden")).length === 1);
  }],

  ["with no model, a prompt stays in the chat and the banner alone says why", async () => {
    const config = vscode.workspace.getConfiguration("pi");
    const previous = config.inspect<string[]>("daemon.args")?.globalValue;
    await config.update("daemon.args", ["--no-session"], vscode.ConfigurationTarget.Global);
    try {
      await until("the daemon to stop after the settings change", () => api.session()!.pid === undefined);
      await send("fix the bug");
      await until("the no-model banner", async () => (await api.chatView.query(".problem:not(.hidden)")).join("").includes("No model is configured"));
      await until("the prompt to stay in the chat", async () => (await api.chatView.query(".msg.user .bubble")).includes("fix the bug"));
      assert.deepEqual((await api.chatView.query(".notice")).filter((n) => /model/i.test(n)), [], "no card repeats the banner");
    } finally {
      await config.update("daemon.args", previous, vscode.ConfigurationTarget.Global);
    }
  }],

  ["a provider that rejects the key: the answer says so once, with Set API Key", async () => {
    // An OpenAI-compatible server on 127.0.0.1 that answers every request 401, as a wrong key gets.
    const server = createServer((request, response) => {
      request.resume();
      response.writeHead(401, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: "Incorrect API key provided", type: "invalid_request_error" } }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const config = vscode.workspace.getConfiguration("pi");
    const previous = config.inspect<string[]>("daemon.args")?.globalValue;
    const { port } = server.address() as AddressInfo;
    try {
      await config.update("daemon.args", ["--no-session"], vscode.ConfigurationTarget.Global);
      await config.update("baseUrl", `http://127.0.0.1:${port}/v1`, vscode.ConfigurationTarget.Global);
      await config.update("model", "m1", vscode.ConfigurationTarget.Global);
      await until("the daemon to stop after the settings change", () => api.session()!.pid === undefined);
      await runPrompt("hello with a wrong key");
      const [error] = await until("the error in the answer", async () => {
        const texts = await api.chatView.query(".msg.assistant .error");
        return texts.some((t) => t.includes("401")) ? texts.filter((t) => t.includes("401")) : undefined;
      });
      assert.match(error, /401 Unauthorized: Incorrect API key provided/);
      assert.deepEqual(await api.chatView.query(".msg.assistant .error .notice-action"), ["Set API Key"]);
      assert.deepEqual((await api.chatView.query(".notice")).filter((n) => n.includes("401")), [], "said once, in the answer");
    } finally {
      await config.update("model", undefined, vscode.ConfigurationTarget.Global);
      await config.update("baseUrl", undefined, vscode.ConfigurationTarget.Global);
      await config.update("daemon.args", previous, vscode.ConfigurationTarget.Global);
      server.close();
    }
  }],
];

export async function run(): Promise<void> {
  const extension = vscode.extensions.getExtension<PiApi>("pi-rpc.pi-vscode");
  assert.ok(extension, "the Pi extension is installed");
  api = await extension.activate();
  let failed = 0;
  // PI_VSCODE_ONLY (a regular expression) runs only the tests whose names match it, when iterating.
  const only = process.env.PI_VSCODE_ONLY ? new RegExp(process.env.PI_VSCODE_ONLY) : undefined;
  for (const [name, body] of tests.filter(([n]) => !only || only.test(n))) {
    try {
      await body();
      console.log(`ok   ${name}`);
    } catch (error) {
      failed++;
      console.log(`FAIL ${name}\n${error instanceof Error ? error.stack : String(error)}`);
    }
  }
  const ran = only ? tests.filter(([n]) => only.test(n)).length : tests.length;
  console.log(`${ran - failed} passed, ${failed} failed`);
  if (failed > 0) throw new Error(`${failed} in-host test(s) failed`);
}
