// The in-host tests of `@` mentions and the keyboard commands. A mention of a file (open with
// unsaved text), a workspace symbol and a problem is picked in the chat's input, sent with
// "Pi: Send Message", and the prompt the daemon echoes back (its user message) must carry each as a
// `<context>` block; the terminal's output arrives through shell integration; the cards are walked
// with Next/Previous Card and a waiting call is accepted and rejected from the keyboard commands.
import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import * as vscode from "vscode";

export interface ContextTestHost {
  query(selector: string, action?: boolean | { type: string } | { key: string }): Promise<string[]>;
  until<T>(what: string, probe: () => T | Promise<T>, timeoutMs?: number): Promise<NonNullable<T>>;
  onDidReceiveEvent: vscode.Event<{ type: string }>;
  session(): { chat: { running: boolean }; approvals: { pending: { toolCallId: string }[] } };
  setPolicy(policy: string): Promise<void>;
  folder(): string;
}

/** The text of each user message the daemon echoed (what it received as the prompt). */
function promptsReceived(host: ContextTestHost): { texts: string[]; dispose(): void } {
  const texts: string[] = [];
  const listening = host.onDidReceiveEvent((event) => {
    const message = (event as { type: string; message?: { role?: string; content?: { type: string; text?: string }[] } }).message;
    if (event.type === "message_start" && message?.role === "user") {
      texts.push((message.content ?? []).map((c) => c.text ?? "").join(""));
    }
  });
  return {
    texts,
    dispose: () => {
      listening.dispose();
    },
  };
}

export function contextTests(host: ContextTestHost): [string, () => Promise<void>][] {
  /** Types `text` (the whole input), waits for the picker to offer `token`, and picks it with arrows and Enter. */
  const pick = async (text: string, token: string): Promise<void> => {
    await host.query("textarea.input", { type: text });
    const rows = await host.until(`the picker to offer @${token}`, async () => {
      const found = await host.query(".mentions .mention .mention-token");
      return found.includes(token) ? found : undefined;
    });
    for (let i = 0; i < rows.indexOf(token); i++) await host.query("textarea.input", { key: "ArrowDown" });
    await host.query("textarea.input", { key: "Enter" });
  };
  const input = async (): Promise<string> => (await host.query("textarea.input"))[0] ?? "";

  return [
    ["@ mentions of a file (unsaved text), a symbol and a problem reach the daemon as context blocks", async () => {
      const greet = vscode.Uri.file(join(host.folder(), "src", "greet.py"));
      const symbols = vscode.languages.registerWorkspaceSymbolProvider({
        provideWorkspaceSymbols: (query) => "greet".includes(query.toLowerCase()) || query.toLowerCase().includes("gre")
          ? [new vscode.SymbolInformation("greet", vscode.SymbolKind.Function, "", new vscode.Location(greet, new vscode.Range(3, 0, 4, 30)))]
          : [],
      });
      const diagnostics = vscode.languages.createDiagnosticCollection("pi-test");
      const diagnostic = new vscode.Diagnostic(new vscode.Range(4, 14, 4, 18), "'Helo' is misspelled", vscode.DiagnosticSeverity.Error);
      diagnostic.source = "spell";
      diagnostics.set(greet, [diagnostic]);
      const received = promptsReceived(host);
      const editor = await vscode.window.showTextDocument(greet);
      await editor.edit((e) => e.insert(new vscode.Position(editor.document.lineCount - 1, 0), "# unsaved marker\n"));
      try {
        await vscode.commands.executeCommand("pi.focusChat");
        await host.until("the chat's input to have the focus", async () => (await host.query("textarea.input:focus")).length === 1);
        await pick("explain @gre", "src/greet.py");
        await pick(`${await input()}and @symbol:gre`, "symbol:greet");
        await pick(`${await input()}and @problems:src`, "problems:src/greet.py");
        assert.equal(await input(), "explain @src/greet.py and @symbol:greet and @problems:src/greet.py ");
        assert.deepEqual(await host.query(".mention-chip"), ["src/greet.py×", "symbol:greet×", "problems:src/greet.py×"]);
        const out = process.env.PI_VSCODE_TEST_OUT;
        if (out) {
          // The picker open on the workspace's entries, with the three chips above the input.
          await host.query("textarea.input", { type: `${await input()}@` });
          await host.until("the picker", async () => (await host.query(".mentions .mention")).length > 3);
          const path = join(out, "mentions.png");
          console.log(`@@screenshot ${path}`);
          await host.until("the screenshot", () => existsSync(`${path}.done`), 15_000);
          await host.query("textarea.input", { key: "Escape" });
          await host.query("textarea.input", { type: (await input()).replace(/ @$/, "") });
        }
        await vscode.commands.executeCommand("pi.send");
        const [prompt] = await host.until("the daemon to receive the prompt", () => (received.texts.length > 0 ? received.texts : undefined));
        await host.until("the answer", async () => (await host.query(".msg.assistant .markdown")).some((t) => t.includes("the symbol and the problem")));
        assert.match(prompt, /^explain @src\/greet\.py and @symbol:greet and @problems:src\/greet\.py\n\n/);
        assert.match(prompt, /<context ref="src\/greet\.py">\n 1 {2}import sys\n[\s\S]* 4 {2}def greet[\s\S]*\n11 {2}# unsaved marker\n<\/context>/);
        assert.match(prompt, /<context ref="src\/greet\.py#L4-L5">\ngreet \(function · src\/greet\.py:4\)\n4 {2}def greet\(name: str\) -> str:\n5 {2} {4}return f"Hel+o, \{name\}!"\n<\/context>/);
        assert.match(prompt, /<context ref="problems:src\/greet\.py">\nsrc\/greet\.py:5: error 'Helo' is misspelled \(spell\)\n<\/context>$/);
        // The chat shows what was typed and which context went with it, not the blocks.
        const bubbles = await host.query(".msg.user .bubble");
        assert.equal(bubbles.at(-1), "explain @src/greet.py and @symbol:greet and @problems:src/greet.py");
        assert.equal((await host.query(".msg.user .context-refs")).at(-1), "with @src/greet.py @src/greet.py#L4-L5 @problems:src/greet.py");
        assert.deepEqual(await host.query(".mention-chips.hidden"), [""], "the chips went with the message");
      } finally {
        received.dispose();
        symbols.dispose();
        diagnostics.dispose();
        await vscode.window.showTextDocument(greet);
        await vscode.commands.executeCommand("workbench.action.revertAndCloseActiveEditor");
      }
    }],

    ["@terminal carries the active terminal's last command and its output (shell integration)", async () => {
      const terminal = vscode.window.createTerminal({ name: "pi-test", cwd: host.folder() });
      terminal.show(true);
      const received = promptsReceived(host);
      try {
        const integration = await host.until("shell integration in the terminal", () => terminal.shellIntegration, 30_000);
        const ended = new Promise<void>((resolve) => {
          const listening = vscode.window.onDidEndTerminalShellExecution((e) => {
            if (e.terminal === terminal) {
              listening.dispose();
              resolve();
            }
          });
        });
        // A moment before the output: shell integration hands over only what is written after the
        // extension host heard that the command started (a browser round trip away in code-server).
        integration.executeCommand("sleep 1; echo pi-terminal-marker-$((6 * 7))");
        await ended;
        await vscode.commands.executeCommand("pi.focusChat");
        await pick("what ran in @term", "terminal");
        await vscode.commands.executeCommand("pi.send");
        const [prompt] = await host.until("the daemon to receive the prompt", () => (received.texts.length > 0 ? received.texts : undefined));
        assert.match(prompt, /<context ref="terminal">\n\$ sleep 1; echo pi-terminal-marker-\$\(\(6 \* 7\)\)\n[\s\S]*pi-terminal-marker-42[\s\S]*\n<\/context>$/);
        assert.match(prompt, /\[exit code 0\]/);
        await host.until("the run to end", () => !host.session().chat.running, 30_000);
      } finally {
        received.dispose();
        terminal.dispose();
      }
    }],

    ["Next and Previous Card move a focus ring through the tool cards", async () => {
      const focused = async () => (await host.query(".tool.card-focused .tool-summary"))[0];
      const summaries = await host.query(".tool .tool-summary");
      assert.ok(summaries.length >= 3, `cards in the chat: ${summaries.join(" | ")}`);
      await vscode.commands.executeCommand("pi.previousCard");
      await host.until("the last card focused", async () => (await focused()) === summaries.at(-1));
      await vscode.commands.executeCommand("pi.previousCard");
      await host.until("the card before it", async () => (await focused()) === summaries.at(-2));
      await vscode.commands.executeCommand("pi.nextCard");
      await host.until("the last card again", async () => (await focused()) === summaries.at(-1));
      assert.equal((await host.query(".tool.card-focused")).length, 1);
    }],

    ["a card keeps its focus ring while it streams output, and while the card beside it does", async () => {
      const focused = async () => (await host.query(".tool.card-focused .tool-summary"))[0];
      // The live tail shows the last lines only: the newest tick printed is the one to compare.
      const ticked = (n: number) => async () =>
        Math.max(0, ...[...(await host.query(".tool[data-tool=bash] .tool-output.live")).join("").matchAll(/tick (\d+)/g)].map((m) => Number(m[1]))) >= n;
      await vscode.commands.executeCommand("pi.focusChat");
      await host.query("textarea.input", { type: "cards while streaming" });
      await vscode.commands.executeCommand("pi.send");
      await host.until("the bash card's live output", ticked(3));
      const [read, bash] = (await host.query(".tool .tool-summary")).slice(-2);
      assert.equal(read, "README.md");
      // Next Card stops at the last card, wherever an earlier test left the ring.
      await host.until("the running bash card focused", async () => {
        if ((await focused()) === bash) return true;
        await vscode.commands.executeCommand("pi.nextCard");
        return false;
      });
      await host.until("more of its output", ticked(15));
      assert.equal(await focused(), bash, "the ring stays on the card as it redraws");
      await vscode.commands.executeCommand("pi.previousCard");
      await host.until("the read card focused", async () => (await focused()) === read);
      await host.until("more output beside it", ticked(30));
      assert.equal(await focused(), read, "the ring stays while the card beside it redraws");
      await host.until("the run to end", () => !host.session().chat.running, 30_000);
      assert.deepEqual(await host.query(".tool.card-focused .tool-summary"), [read]);
    }],

    ["Accept and Reject answer the waiting call from the keyboard commands", async () => {
      const note = join(host.folder(), "kbd-note.txt");
      await host.setPolicy("ask");
      try {
        const waiting = () => host.session().approvals.pending.length === 1;
        await vscode.commands.executeCommand("pi.focusChat");
        await host.query("textarea.input", { type: "kbd write" });
        await vscode.commands.executeCommand("pi.send");
        await host.until("the write to wait for approval", waiting);
        // Reject asks why in an input box; accepting it empty rejects without a reason.
        const rejecting = vscode.commands.executeCommand("pi.reject");
        await host.until("the rejection", async () => {
          await vscode.commands.executeCommand("workbench.action.acceptSelectedQuickOpenItem");
          return !waiting();
        });
        await rejecting;
        await host.until("the run to end", () => !host.session().chat.running, 30_000);
        assert.ok(!existsSync(note), "a rejected write leaves no file");
        assert.match((await host.query(".tool[data-tool=write]")).at(-1) ?? "", /The user rejected this write call/);
        await host.query("textarea.input", { type: "kbd write" });
        await vscode.commands.executeCommand("pi.send");
        await host.until("the write to wait again", waiting);
        await vscode.commands.executeCommand("pi.accept");
        await host.until("the accepted write on disk", () => existsSync(note) && readFileSync(note, "utf8") === "written from the keyboard\n");
        await host.until("the run to end", () => !host.session().chat.running, 30_000);
      } finally {
        rmSync(note, { force: true });
        await vscode.commands.executeCommand("workbench.action.closeAllEditors");
        await host.setPolicy("auto");
      }
    }],
  ];
}
