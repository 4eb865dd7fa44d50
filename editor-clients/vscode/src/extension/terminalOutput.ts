// The `@terminal` mention's text: the recent commands of each terminal and their output, as VS
// Code's shell integration reports them. The API gives a command's output only to a listener that
// was there when it started (there is no read-back of the buffer), so this records from activation
// on, a bounded tail per terminal. Without shell integration (a shell it cannot inject into, or
// `terminal.integrated.shellIntegration.enabled` off) nothing is recorded, and the mention says so.
import * as vscode from "vscode";

/** How much of a terminal's recent output is kept. */
const KEEP_CHARS = 40_000;

/** Shell integration's escape sequences and colours, which the model should not have to read. */
function plain(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, "").replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, "").replace(/\r(?!\n)/g, "");
}

export class TerminalOutput implements vscode.Disposable {
  private readonly logs = new Map<vscode.Terminal, string>();
  private readonly commands = new Map<vscode.Terminal, number>();
  /** Each command's output still being read: its exit code is written after the last of it. */
  private readonly reading = new Map<vscode.TerminalShellExecution, Promise<void>>();
  private readonly subscriptions: vscode.Disposable[];

  constructor() {
    this.subscriptions = [
      vscode.window.onDidStartTerminalShellExecution((event) => {
        this.reading.set(event.execution, this.record(event.terminal, event.execution).catch(() => undefined));
      }),
      vscode.window.onDidEndTerminalShellExecution((event) => {
        void (this.reading.get(event.execution) ?? Promise.resolve()).then(() => {
          this.reading.delete(event.execution);
          if (event.exitCode !== undefined) this.append(event.terminal, `[exit code ${event.exitCode}]\n`);
        });
      }),
      vscode.window.onDidCloseTerminal((terminal) => {
        this.logs.delete(terminal);
        this.commands.delete(terminal);
      }),
    ];
  }

  private async record(terminal: vscode.Terminal, execution: vscode.TerminalShellExecution): Promise<void> {
    this.commands.set(terminal, (this.commands.get(terminal) ?? 0) + 1);
    this.append(terminal, `$ ${execution.commandLine.value}\n`);
    for await (const data of execution.read()) this.append(terminal, plain(data));
  }

  private append(terminal: vscode.Terminal, text: string): void {
    const log = (this.logs.get(terminal) ?? "") + text;
    this.logs.set(terminal, log.length > KEEP_CHARS ? log.slice(log.indexOf("\n", log.length - KEEP_CHARS) + 1) : log);
  }

  /** The active terminal's recorded commands and output, or why there is none. */
  recent(): string {
    const terminal = vscode.window.activeTerminal;
    if (!terminal) return "(no terminal is open)";
    const log = this.logs.get(terminal);
    if (log) return log;
    return terminal.shellIntegration
      ? `(no command has run in terminal "${terminal.name}" since Pi started)`
      : `(terminal "${terminal.name}" has no shell integration, so its output cannot be read)`;
  }

  /** The picker's detail for the terminal row. */
  describe(): string {
    const terminal = vscode.window.activeTerminal;
    const count = terminal ? (this.commands.get(terminal) ?? 0) : 0;
    if (count > 0) return count === 1 ? "1 command" : `${count} commands`;
    return terminal?.shellIntegration ? "no command yet" : "no shell integration";
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }
}
