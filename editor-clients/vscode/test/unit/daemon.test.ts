// DaemonProcess against the real pi-rpc on the scripted model, over real pipes.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { DaemonProcess, exitMessage } from "../../src/client/daemonProcess";
import type { AgentEvent } from "../../src/protocol";
import { PI_RPC } from "./helpers";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const workspaces: string[] = [];
after(() => {
  for (const dir of workspaces) rmSync(dir, { recursive: true, force: true });
});

function workspace(): { dir: string; script: string } {
  const dir = mkdtempSync(join(tmpdir(), "pi-vscode-unit-"));
  workspaces.push(dir);
  const script = join(dir, "script.json");
  writeFileSync(script, JSON.stringify({ replies: [
    { match: "slow", turns: [[{ toolCall: { name: "bash", arguments: { command: "sleep 30" } } }], [{ text: "slept" }]] },
    { repeat: true, turns: [[{ text: "Hello from the script.", chunk: 3 }]] },
  ] }));
  return { dir, script };
}

describe("DaemonProcess", () => {
  test("initialize, a streamed prompt, then stop leaves no process", async () => {
    const { dir, script } = workspace();
    const daemon = new DaemonProcess({ command: PI_RPC, args: ["--script", script, "--cwd", dir, "--no-session"], cwd: dir, env: process.env });
    const info = await daemon.client.request("initialize", { clientInfo: { name: "unit" } });
    assert.equal(info.scripted, true);
    const events: AgentEvent[] = [];
    daemon.client.onEvent((e) => events.push(e));
    const outcome = await daemon.client.request("prompt", { message: "hi" });
    assert.ok("stopReason" in outcome && outcome.stopReason === "stop");
    const text = events.flatMap((e) => (e.type === "message_update" && e.assistantMessageEvent.type === "text_delta" ? [e.assistantMessageEvent.delta] : [])).join("");
    assert.equal(text, "Hello from the script.");
    const pid = daemon.pid!;
    const exit = await daemon.stop();
    assert.equal(exit.code, 0);
    assert.equal(alive(pid), false);
  });

  test("cancelling a prompt during `sleep 30` ends the run and kills the command", async () => {
    const { dir, script } = workspace();
    const daemon = new DaemonProcess({ command: PI_RPC, args: ["--script", script, "--cwd", dir, "--no-session"], cwd: dir, env: process.env });
    await daemon.client.request("initialize", {});
    const started = new Promise<void>((resolve) => daemon.client.onEvent((e) => e.type === "tool_execution_start" && resolve()));
    const pending = daemon.client.cancellable("prompt", { message: "slow" });
    await started;
    const end = new Promise<AgentEvent>((resolve) => daemon.client.onEvent((e) => e.type === "tool_execution_end" && resolve(e)));
    pending.cancel();
    await assert.rejects(pending.result, (e: { code?: number }) => e.code === -32800);
    const toolEnd = await end;
    assert.ok(toolEnd.type === "tool_execution_end" && toolEnd.isError);
    await daemon.stop();
  });

  test("a missing executable is explained with how to install pi-rpc from the repository", async () => {
    const daemon = new DaemonProcess({ command: "pi-rpc-not-installed-here", args: [], cwd: tmpdir(), env: process.env });
    const exit = await daemon.exited;
    const message = exitMessage(exit, "pi-rpc-not-installed-here");
    assert.match(message, /was not found/);
    assert.doesNotMatch(message, /install pi-rpc\b/, "pi-rpc is not on PyPI: no install by name");
    assert.match(message, /checkout of the pi-rpc repository/);
    assert.match(message, /pi\.daemon\.command/);
  });

  test("a request to a missing executable fails cleanly, with no unhandled stream error", async () => {
    const unhandled: unknown[] = [];
    const record = (error: unknown) => unhandled.push(error);
    process.on("uncaughtException", record);
    process.on("unhandledRejection", record);
    try {
      const daemon = new DaemonProcess({ command: "pi-rpc-not-installed-here", args: [], cwd: tmpdir(), env: process.env });
      // What the extension does at once: initialize, before the spawn error has arrived.
      const initialize = daemon.client.request("initialize", { clientInfo: { name: "unit" } });
      await daemon.exited;
      await assert.rejects(initialize);
      await assert.rejects(daemon.client.request("state"));
      await new Promise((resolve) => setTimeout(resolve, 200)); // let a stray stream error surface
      assert.deepEqual(unhandled.map(String), []);
    } finally {
      process.off("uncaughtException", record);
      process.off("unhandledRejection", record);
    }
  });

  test("a daemon that dies shows its status and the last lines of its stderr", async () => {
    const daemon = new DaemonProcess({ command: PI_RPC, args: ["--cwd", "/nonexistent/dir/for/pi"], cwd: tmpdir(), env: process.env });
    const exit = await daemon.exited;
    assert.notEqual(exit.code, 0);
    const message = exitMessage(exit, PI_RPC);
    assert.match(message, /exited with status \d+/);
    assert.ok(exit.stderrTail.length > 0, "stderr was captured");
  });
});
