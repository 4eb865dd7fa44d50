// The in-host tests of checkpoints in the chat: the restore button of each user message, the
// rewind bar, a conflict with its diff editor and "Restore anyway", a conversation rewind, and
// edit-and-resend; and the context chip's Compact. Run one (test/host/script.json) edits two files, writes one, creates one and
// deletes one with bash; run two edits again. Restoring run two's message gives run one's tree,
// restoring run one's gives the original tree back, bytes and modes, and a file the user edited in
// between is a conflict left alone until they say otherwise.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import * as vscode from "vscode";

interface ChatItem { kind: string; key?: string; text?: string; restorable?: boolean }
export interface CheckpointTestHost {
  session(): { chat: { items: ChatItem[]; running: boolean } };
  query(selector: string, action?: boolean | { type: string } | { key: string }): Promise<string[]>;
  until<T>(what: string, probe: () => T | Promise<T>, timeoutMs?: number): Promise<NonNullable<T>>;
  runPrompt(text: string): Promise<void>;
  folder(): string;
}

type Tree = Record<string, { text: string; mode: number }>;

/** Every file under the fixture folder: text and permission bits. */
function tree(root: string): Tree {
  const files: Tree = {};
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const info = statSync(path);
      if (info.isDirectory()) walk(path);
      else files[relative(root, path)] = { text: readFileSync(path, "utf8"), mode: info.mode & 0o777 };
    }
  };
  walk(root);
  return files;
}

/** The diff editors the rewind bar opened (the restored side is served from memory). */
function rewindDiffs(): vscode.TabInputTextDiff[] {
  return vscode.window.tabGroups.all.flatMap((g) => g.tabs).map((t) => t.input)
    .filter((i): i is vscode.TabInputTextDiff => i instanceof vscode.TabInputTextDiff && i.modified.scheme === "pi-before");
}

/** How long a step took, for the report (the workbench log, out/host/workbench.log). */
function timing(what: string, started: number): void {
  console.log(`rewind timing: ${what}: ${Date.now() - started} ms`);
}

/** The restore was one undo step in `document`'s editor: undo gives the earlier text, redo the restored one (then saved). */
async function oneUndoStep(host: CheckpointTestHost, document: vscode.TextDocument, earlier: (text: string) => boolean): Promise<void> {
  const restored = document.getText();
  await vscode.window.showTextDocument(document);
  await vscode.commands.executeCommand("undo");
  await host.until(`one undo in ${document.fileName} to bring the earlier text back`, () => earlier(document.getText()));
  await vscode.commands.executeCommand("redo");
  await host.until("redo to restore it again", () => document.getText() === restored);
  await document.save();
}

export function checkpointTests(host: CheckpointTestHost): [string, () => Promise<void>][] {
  const ckpt = (): string => join(host.folder(), "ckpt");
  const messages = (): ChatItem[] => host.session().chat.items.filter((i) => i.kind === "user" && i.restorable);
  const restoreButton = (text: string): string => {
    const item = messages().find((i) => i.text === text);
    assert.ok(item?.key, `the chat has the message "${text}"`);
    return `.msg.user[data-key="${item.key}"]`;
  };
  const bar = async (): Promise<string[]> => host.query(".rewind:not(.hidden) .rewind-file");
  let original: Tree = {};
  let afterRunOne: Tree = {};

  return [
    ["restore on a later message puts back that run's files, into the open editor as one undo step", async () => {
      await vscode.commands.executeCommand("pi.newSession");
      original = tree(ckpt());
      assert.equal(original["doomed.sh"].mode, 0o755);
      const alpha = await vscode.workspace.openTextDocument(join(ckpt(), "alpha.txt"));
      await vscode.window.showTextDocument(alpha);
      await host.runPrompt("ckpt run one");
      afterRunOne = tree(ckpt());
      assert.deepEqual(Object.keys(afterRunOne).sort(), ["alpha.txt", "beta.txt", "gamma.txt", "made/out.txt"]);
      assert.match(afterRunOne["alpha.txt"].text, /alpha 2 \(run one\)/);
      await host.runPrompt("ckpt run two");
      assert.match(alpha.getText(), /\(run two\)/);
      // Run two's reply reports 50,000 input tokens: a quarter of the scripted model's 200,000.
      assert.deepEqual(await host.until("the context chip", async () => {
        const found = await host.query(".context-usage:not(.hidden)");
        return found[0] === "context 25%" ? found : undefined;
      }), ["context 25%"]);
      assert.equal((await host.query(".chip.compact:not(.hidden)")).length, 1, "with Compact beside it");

      let started = Date.now();
      await host.query(`${restoreButton("ckpt run two")} .msg-restore`, true);
      const listed = await host.until("the rewind bar's files", async () => ((await bar()).length === 2 ? bar() : undefined));
      timing("restore button to the bar's file list", started);
      assert.deepEqual(listed, ["restoreckpt/alpha.txt", "restoreckpt/gamma.txt"]);
      assert.deepEqual(await host.query(".rewind .rewind-head"), ["Back to before “ckpt run two”"]);
      started = Date.now();
      await host.query(".rewind .rewind-files", true);
      await host.until("the bar to close", async () => (await host.query(".rewind.hidden")).length === 1);
      timing("Files only (2 files, one in an open editor) to the bar closed", started);
      assert.deepEqual(tree(ckpt()), afterRunOne, "run one's tree");
      assert.equal(alpha.getText(), afterRunOne["alpha.txt"].text, "the editor shows the restored text");
      assert.ok(!alpha.isDirty, "a clean editor is saved with it");
      assert.equal(messages().length, 2, "Files only keeps the conversation");
      await oneUndoStep(host, alpha, (text) => text.includes("(run two)"));
    }],

    ["restore on the first message: a file the user changed meanwhile is a conflict with a diff, the rest is the original tree", async () => {
      const beta = await vscode.workspace.openTextDocument(join(ckpt(), "beta.txt"));
      const editor = await vscode.window.showTextDocument(beta);
      await editor.edit((e) => e.insert(new vscode.Position(0, 0), "my own line\n"));
      assert.ok(beta.isDirty);
      // A file bash made, open with unsaved text: the rewind removes it on disk, the text stays in the editor.
      const made = await vscode.workspace.openTextDocument(join(ckpt(), "made", "out.txt"));
      await (await vscode.window.showTextDocument(made)).edit((e) => e.insert(new vscode.Position(0, 0), "typed\n"));

      await host.query(`${restoreButton("ckpt run one")} .msg-restore`, true);
      const listed = await host.until("the rewind bar's files", async () => ((await bar()).length === 5 ? bar() : undefined));
      assert.deepEqual(listed, ["restoreckpt/alpha.txt", "restoreckpt/beta.txt", "bring backckpt/doomed.sh", "restoreckpt/gamma.txt", "removeckpt/made/out.txt"]);
      const started = Date.now();
      await host.query(".rewind .rewind-both", true);
      // The button first, then the rows: each query is a round trip to the view, and rows read
      // before the conflict stage is drawn would still be the five of the choice.
      const conflicts = await host.until("the conflict", async () =>
        (await host.query(".rewind-force")).length === 1 ? host.query(".rewind .rewind-file") : undefined);
      assert.deepEqual(conflicts, ["conflictckpt/beta.txtdiff", "unsavedckpt/made/out.txtdiff"]);
      timing("Files and conversation (5 files) to the conflict shown", started);
      const now = tree(ckpt());
      assert.deepEqual({ ...now, "beta.txt": original["beta.txt"] }, original, "everything else is back, bytes and modes");
      assert.equal(now["beta.txt"].text, afterRunOne["beta.txt"].text, "the conflicting file is left alone");
      assert.equal(beta.getText(), `my own line\n${afterRunOne["beta.txt"].text}`, "and so is the user's unsaved text");
      assert.equal(messages().length, 2, "the conversation waits for the answer about the conflict");

      await host.query(".rewind .rewind-diff", true);
      const [diff] = await host.until("the conflict's diff editor", () => (rewindDiffs().length === 1 ? rewindDiffs() : undefined));
      assert.equal(diff.original.fsPath, beta.uri.fsPath, "the file as it is now, on the left");
      assert.equal((await vscode.workspace.openTextDocument(diff.modified)).getText(), original["beta.txt"].text, "what the rewind restores, on the right");
      const out = process.env.PI_VSCODE_TEST_OUT;
      if (out) {
        await vscode.commands.executeCommand("notifications.clearAll"); // an earlier test's daemon kill
        const path = join(out, "checkpoints.png");
        console.log(`@@screenshot-page ${path}`);
        await host.until("the screenshot", () => existsSync(`${path}.done`), 15_000);
      }

      const forcing = Date.now();
      await host.query(".rewind .rewind-force", true);
      await host.until("the forked conversation", () => messages().length === 0);
      timing("Restore anyway to the forked chat", forcing);
      assert.deepEqual(await host.until("the unsaved editor listed", async () => {
        const rows = await host.query(".rewind:not(.hidden) .rewind-file");
        return rows.length === 1 ? rows : undefined;
      }), ["unsavedckpt/made/out.txtdiff"]);
      assert.equal(made.getText(), "typed\nbuilt\n", "the user's unsaved text is kept");
      await host.query(".rewind .rewind-diff", true);
      await host.until("its diff against the disk", () => rewindDiffs().some((d) => d.original.fsPath === made.uri.fsPath));
      await host.query(".rewind .rewind-cancel", true);
      await vscode.window.showTextDocument(made);
      await vscode.commands.executeCommand("workbench.action.revertAndCloseActiveEditor");
      assert.equal(beta.getText(), original["beta.txt"].text, "Restore anyway puts it back in the editor");
      await oneUndoStep(host, beta, (text) => text.startsWith("my own line\n"));
      assert.deepEqual(tree(ckpt()), original, "the original tree");
      assert.ok(!existsSync(join(ckpt(), "made")), "the folder the run created is gone too");
      assert.deepEqual(await host.query(".msg.user"), [], "the chat shows the fork: before the first message");
      assert.deepEqual(await host.query("textarea.input"), ["ckpt run one"], "the message is back in the composer");
      await host.query("textarea.input", { type: "" });
      await vscode.commands.executeCommand("workbench.action.closeAllEditors");
    }],

    ["edit-and-resend: the edited message replaces the old one, whose run's files are undone", async () => {
      await host.runPrompt("ckpt run one");
      assert.notDeepEqual(tree(ckpt()), original);
      const message = restoreButton("ckpt run one");
      await host.query(`${message} .msg-edit`, true);
      assert.deepEqual(await host.query(`${message} .msg-edit-input`), ["ckpt run one"], "the message in a text box");
      await host.query(`${message} .msg-edit-input`, { type: "ckpt resend" });
      await host.query(`${message} .msg-edit-send`, true);
      await host.until("the resent run", () => messages().length === 1 && messages()[0].text === "ckpt resend" && !host.session().chat.running
        && existsSync(join(ckpt(), "resent.txt")), 30_000);
      const now = tree(ckpt());
      assert.deepEqual({ ...now, "resent.txt": undefined }, { ...original, "resent.txt": undefined }, "run one's changes are undone");
      assert.equal(now["resent.txt"].text, "sent again\n");
      assert.deepEqual(await host.query(".msg.user .bubble"), ["ckpt resend"]);
    }],


    ["Compact in the header summarises the older turns; the chat shows the summary and the usage is unknown until the next reply", async () => {
      // 96,000 characters of output (about 24,000 tokens) are more than Pi keeps verbatim (20,000):
      // the turn before them is summarised.
      await host.runPrompt("ckpt long");
      await host.query(".chip.compact", true);
      await host.until("the compacted chat", async () =>
        (await host.query(".notice")).some((t) => t.startsWith("Earlier conversation summarised")), 30_000);
      assert.ok((await host.query(".msg.assistant")).some((t) => t.includes("I am the scripted model.")), "the summary is shown");
      assert.deepEqual(await host.until("the chip to say the usage is unknown", async () => {
        const found = await host.query(".context-usage:not(.hidden)");
        return found[0]?.startsWith("context ?") ? found : undefined;
      }), ["context ?/200k"]);
    }],
  ];
}
