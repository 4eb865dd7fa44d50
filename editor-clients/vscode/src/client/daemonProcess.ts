// One pi-rpc child process: spawn, stderr capture, exit reporting and a clean stop. No VS Code
// imports, so the unit tests run it under plain Node.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { Writable } from "node:stream";
import { PiClient } from "./piClient";

/** How many stderr lines are kept for the "daemon died" message. */
const STDERR_TAIL_LINES = 20;

export interface DaemonOptions {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  onStderr?: (text: string) => void;
}

export interface DaemonExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines the daemon wrote to stderr. */
  stderrTail: string[];
  /** Set when the executable could not be started at all (ENOENT, EACCES). */
  spawnError?: NodeJS.ErrnoException;
}

/** The text a user sees when the daemon cannot be found: what to install, or which setting to fix. */
export function notFoundMessage(command: string): string {
  return (
    `Pi could not start the daemon: "${command}" was not found. ` +
    "Install it from a checkout of the pi-rpc repository (`uv tool install .` or `pipx install .` there), " +
    'or set "pi.daemon.command" to the full path of pi-rpc.'
  );
}

/** The text a user sees when a running daemon ended unexpectedly. */
export function exitMessage(exit: DaemonExit, command: string): string {
  if (exit.spawnError) {
    if (exit.spawnError.code === "ENOENT") return notFoundMessage(command);
    return `Pi could not start "${command}": ${exit.spawnError.message}`;
  }
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with status ${exit.code}`;
  const tail = exit.stderrTail.slice(-5).join("\n");
  return `The Pi daemon ${how}.${tail ? `\n${tail}` : ""}`;
}

/**
 * The daemon's stdin as the client writes it: a write after the process is gone (it was never
 * found, or it died) is dropped, not an unhandled `ERR_STREAM_DESTROYED`; `exited` reports the
 * death and the client's pending requests are rejected when it is disposed.
 */
function stdinOf(child: ChildProcessWithoutNullStreams): Writable {
  return new Writable({
    write(chunk: Buffer, encoding, callback) {
      if (!child.stdin.writable) {
        callback();
        return;
      }
      child.stdin.write(chunk, encoding, () => callback());
    },
  });
}

export class DaemonProcess {
  readonly client: PiClient;
  readonly exited: Promise<DaemonExit>;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly stderrLines: string[] = [];
  private partialLine = "";

  constructor(readonly options: DaemonOptions) {
    this.child = spawn(options.command, options.args, { cwd: options.cwd, env: options.env, stdio: "pipe" });
    this.child.stdin.on("error", () => undefined); // EPIPE after a crash is reported through `exited`
    this.client = new PiClient(this.child.stdout, stdinOf(this.child));
    this.child.stderr.setEncoding("utf8");
    this.child.stderr.on("data", (chunk: string) => this.takeStderr(chunk));
    this.exited = new Promise((resolve) => {
      let spawnError: NodeJS.ErrnoException | undefined;
      this.child.on("error", (error: NodeJS.ErrnoException) => {
        spawnError = error;
        if (this.child.pid === undefined) resolve(this.exit(null, null, spawnError));
      });
      this.child.on("close", (code, signal) => resolve(this.exit(code, signal, spawnError)));
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get stderrTail(): string[] {
    return [...this.stderrLines];
  }

  /** Polite stop (`shutdown`/`exit`), then SIGTERM, then SIGKILL, each after a grace period. */
  async stop(graceMs = 2000): Promise<DaemonExit> {
    if (this.child.exitCode === null && this.child.signalCode === null && this.child.pid !== undefined) {
      const polite = this.client.shutdown().catch(() => undefined);
      if (!(await this.exitsWithin(graceMs, polite))) {
        this.child.kill("SIGTERM");
        if (!(await this.exitsWithin(graceMs))) this.child.kill("SIGKILL");
      }
    }
    this.client.dispose();
    return this.exited;
  }

  /** Whether the process exits within `ms` (after `first` settles, when given). */
  private async exitsWithin(ms: number, first?: Promise<unknown>): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    try {
      if (first) await Promise.race([first, deadline]);
      return await Promise.race([this.exited.then(() => true), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private exit(code: number | null, signal: NodeJS.Signals | null, spawnError?: NodeJS.ErrnoException): DaemonExit {
    this.client.dispose();
    if (this.partialLine) this.pushLine(this.partialLine);
    return { code, signal, stderrTail: this.stderrTail, spawnError };
  }

  private takeStderr(chunk: string): void {
    this.options.onStderr?.(chunk);
    const lines = (this.partialLine + chunk).split("\n");
    this.partialLine = lines.pop() ?? "";
    for (const line of lines) this.pushLine(line);
  }

  private pushLine(line: string): void {
    this.stderrLines.push(line);
    if (this.stderrLines.length > STDERR_TAIL_LINES) this.stderrLines.shift();
  }
}
