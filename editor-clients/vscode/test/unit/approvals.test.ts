// Approvals and the editor's files on the client side: PiClient serving the daemon's requests
// through the ApprovalQueue against the real daemon (real pipes), the chat model's approval state,
// and the minimal replacement an open document receives.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { type ApprovalChange, ApprovalQueue } from "../../src/client/approvalQueue";
import { DaemonProcess } from "../../src/client/daemonProcess";
import type { AgentEvent, ApprovalRequest } from "../../src/protocol";
import { applyEvent, emptyChat } from "../../src/common/chatModel";
import { applyReplacement, minimalReplacement } from "../../src/common/textEdit";
import { PI_RPC } from "./helpers";

const ORIGINAL = 'return f"Helo, {name}!"';
const FIXED = 'return f"Hello, {name}!"';
const GREET = `import sys\n\n\ndef greet(name: str) -> str:\n    ${ORIGINAL}\n`;

const workspaces: string[] = [];
const daemons: DaemonProcess[] = [];
after(async () => {
  await Promise.all(daemons.map((d) => d.stop()));
  for (const dir of workspaces) rmSync(dir, { recursive: true, force: true });
});

function start(capabilities: { approvals?: boolean; files?: boolean }): { daemon: DaemonProcess; dir: string; ready: Promise<unknown> } {
  const dir = mkdtempSync(join(tmpdir(), "pi-vscode-approvals-"));
  workspaces.push(dir);
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src", "greet.py"), GREET);
  const script = join(dir, "script.json");
  writeFileSync(script, JSON.stringify({ replies: [
    { match: "^fix greeting", repeat: true, turns: [
      [{ toolCall: { name: "edit", arguments: { path: "src/greet.py", edits: [{ oldText: "Helo", newText: "Hello" }] } } }],
      [{ text: "fixed" }]] },
    { match: "^run tests", repeat: true, turns: [
      [{ toolCall: { name: "bash", arguments: { command: "echo tests passed" } } }], [{ text: "ran" }]] },
    { match: "^read greet", repeat: true, turns: [
      [{ toolCall: { name: "read", arguments: { path: "src/greet.py" } } }], [{ text: "read it" }]] },
  ] }));
  const daemon = new DaemonProcess({ command: PI_RPC, args: ["--script", script, "--cwd", dir, "--no-session"], cwd: dir, env: process.env });
  daemons.push(daemon);
  const ready = daemon.client.request("initialize", { clientInfo: { name: "unit" }, capabilities });
  return { daemon, dir, ready };
}

/** Serves approval/request through a queue and records what the queue reported. */
function withQueue(daemon: DaemonProcess): { queue: ApprovalQueue; changes: ApprovalChange[]; added: () => Promise<ApprovalRequest> } {
  const queue = new ApprovalQueue();
  const changes: ApprovalChange[] = [];
  queue.onChange((c) => changes.push(c));
  daemon.client.onRequest("approval/request", (request, token) => queue.ask(request, token));
  const added = () => new Promise<ApprovalRequest>((resolve) => {
    const sub = queue.onChange((c) => {
      if (c.kind === "added") {
        sub.dispose();
        resolve(c.request);
      }
    });
  });
  return { queue, changes, added };
}

function toolEnds(daemon: DaemonProcess): AgentEvent[] {
  const ends: AgentEvent[] = [];
  daemon.client.onEvent((e) => e.type === "tool_execution_end" && ends.push(e));
  return ends;
}

function resultText(event: AgentEvent | undefined): string {
  assert.ok(event?.type === "tool_execution_end");
  const first = (event.result.content as { type: string; text?: string }[])[0];
  return first?.text ?? "";
}

describe("approvals against the real daemon", () => {
  test("an edit waits with its diff until allowed, then runs", async () => {
    const { daemon, dir, ready } = start({ approvals: true });
    await ready;
    const { queue, changes, added } = withQueue(daemon);
    const asked = added();
    const prompt = daemon.client.request("prompt", { message: "fix greeting" });
    const request = await asked;
    assert.equal(request.toolName, "edit");
    assert.ok(request.preview.oldText?.includes(ORIGINAL) && request.preview.newText?.includes(FIXED));
    assert.match(request.preview.patch ?? "", /^\+ {4}return f"Hello/m);
    assert.equal(readFileSync(join(dir, "src", "greet.py"), "utf8"), GREET, "nothing is written while the user decides");
    assert.deepEqual(queue.pending.map((r) => r.toolCallId), [request.toolCallId]);
    assert.equal(queue.decide(request.toolCallId, { outcome: "allow" }), true);
    const outcome = await prompt;
    assert.ok("stopReason" in outcome && outcome.stopReason === "stop");
    assert.match(readFileSync(join(dir, "src", "greet.py"), "utf8"), /Hello, \{name\}/);
    assert.deepEqual(changes.map((c) => c.kind === "removed" ? c.outcome : c.kind), ["added", "allow"]);
    assert.equal(queue.decide(request.toolCallId, { outcome: "allow" }), false, "a call is answered once");
  });

  test("reject leaves the file untouched and the model reads the reason", async () => {
    const { daemon, dir, ready } = start({ approvals: true });
    await ready;
    const { queue, added } = withQueue(daemon);
    const ends = toolEnds(daemon);
    const asked = added();
    const prompt = daemon.client.request("prompt", { message: "fix greeting" });
    queue.decide((await asked).toolCallId, { outcome: "reject", reason: "keep the typo, it is a fixture" });
    await prompt;
    assert.equal(resultText(ends[0]), "The user rejected this edit call: keep the typo, it is a fixture");
    assert.equal(readFileSync(join(dir, "src", "greet.py"), "utf8"), GREET);
  });

  test("allow always stops asking for that command prefix", async () => {
    const { daemon, ready } = start({ approvals: true });
    await ready;
    const { queue, changes, added } = withQueue(daemon);
    const asked = added();
    const first = daemon.client.request("prompt", { message: "run tests" });
    const request = await asked;
    assert.equal(request.suggestedRule, "bash(echo tests:*)");
    assert.equal(request.preview.command, "echo tests passed");
    queue.decide(request.toolCallId, { outcome: "allowAlways" });
    await first;
    await daemon.client.request("prompt", { message: "run tests" });
    assert.equal(changes.filter((c) => c.kind === "added").length, 1);
  });

  test("an abort while a call waits cancels the request: the queue empties and reports it", async () => {
    const { daemon, dir, ready } = start({ approvals: true });
    await ready;
    const { queue, changes, added } = withQueue(daemon);
    const asked = added();
    const prompt = daemon.client.request("prompt", { message: "fix greeting" });
    const request = await asked;
    const removed = new Promise<ApprovalChange>((resolve) => queue.onChange((c) => c.kind === "removed" && resolve(c)));
    await daemon.client.request("abort");
    const change = await removed;
    assert.ok(change.kind === "removed" && change.outcome === "cancelled" && change.request.toolCallId === request.toolCallId);
    assert.deepEqual(queue.pending, []);
    const outcome = await prompt;
    assert.ok("stopReason" in outcome && outcome.stopReason === "aborted");
    assert.equal(changes.length, 2);
    assert.equal(readFileSync(join(dir, "src", "greet.py"), "utf8"), GREET);
  });
});

describe("the editor's files against the real daemon", () => {
  test("read returns the editor's unsaved text, and an edit is handed back to the editor", async () => {
    const { daemon, dir, ready } = start({ files: true });
    const buffers = new Map<string, string>();
    const path = join(dir, "src", "greet.py");
    buffers.set(path, GREET.replace("import sys", "import sys  # unsaved in the editor"));
    daemon.client.onRequest("fs/readTextFile", ({ path: p }) => Promise.resolve({ content: buffers.get(p) ?? readFileSync(p, "utf8") }));
    daemon.client.onRequest("fs/writeTextFile", ({ path: p, content }) => {
      buffers.set(p, content);
      return Promise.resolve(null);
    });
    await ready;
    const ends = toolEnds(daemon);
    await daemon.client.request("prompt", { message: "read greet" });
    assert.match(resultText(ends[0]), /unsaved in the editor/);
    await daemon.client.request("prompt", { message: "fix greeting" });
    assert.match(buffers.get(path) ?? "", /# unsaved in the editor[\s\S]*Hello, \{name\}/);
    assert.equal(readFileSync(path, "utf8"), GREET, "the disk is the editor's business");
  });
});

describe("the chat model while a call waits", () => {
  const request: ApprovalRequest = {
    toolCallId: "c1", toolName: "bash", args: { command: "npm test" }, cwd: "/w", title: "Run npm test",
    preview: { title: "Run npm test", command: "npm test" }, suggestedRule: "bash(npm test:*)",
  };

  test("the card asks, the status says so, and the end of the wait clears both", () => {
    const chat = emptyChat();
    applyEvent(chat, { type: "agent_start" });
    applyEvent(chat, { type: "tool_execution_start", toolCallId: "c1", toolName: "bash", args: { command: "npm test" } });
    applyEvent(chat, { type: "tool_approval_request", request });
    assert.deepEqual(chat.activity, { kind: "approval", name: "bash" });
    assert.equal(chat.tools.c1.approval?.command, "npm test");
    assert.equal(chat.tools.c1.approval?.suggestedRule, "bash(npm test:*)");
    applyEvent(chat, { type: "tool_approval_end", toolCallId: "c1", outcome: "allow" });
    assert.equal(chat.tools.c1.approval, undefined);
    assert.equal(chat.tools.c1.approvalOutcome, "allow");
    assert.deepEqual(chat.activity, { kind: "tool", name: "bash" });
  });

  test("a run that ends while a call waits leaves no question open", () => {
    const chat = emptyChat();
    applyEvent(chat, { type: "agent_start" });
    applyEvent(chat, { type: "tool_execution_start", toolCallId: "c1", toolName: "bash", args: {} });
    applyEvent(chat, { type: "tool_approval_request", request });
    applyEvent(chat, { type: "agent_end", messages: [] });
    assert.equal(chat.tools.c1.approval, undefined);
    assert.equal(chat.tools.c1.status, "error");
    assert.deepEqual(chat.activity, { kind: "idle" });
  });
});

/** A small seeded PRNG, so the property test is deterministic. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe("minimalReplacement", () => {
  const alphabet = ["a", "b", "\n", "\r\n", "é", "😀", " "];
  const text = (rand: () => number, n: number) => Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join("");

  test("applied to the old text it gives the new one, and never splits a CRLF or a surrogate pair (2000 seeded cases)", () => {
    const rand = prng(20261201);
    for (let i = 0; i < 2000; i++) {
      const before = text(rand, Math.floor(rand() * 12));
      const after = rand() < 0.3 ? before : text(rand, Math.floor(rand() * 12));
      const r = minimalReplacement(before, after);
      assert.equal(applyReplacement(before, r), after, JSON.stringify({ before, after, r }));
      for (const at of [r.start, r.end]) {
        assert.ok(!(before[at - 1] === "\r" && before[at] === "\n"), `CRLF split at ${at}: ${JSON.stringify({ before, after })}`);
        const code = before.charCodeAt(at - 1);
        assert.ok(!(code >= 0xd800 && code <= 0xdbff), `surrogate pair split at ${at}: ${JSON.stringify({ before, after })}`);
      }
    }
  });

  test("only the changed part is replaced", () => {
    assert.deepEqual(minimalReplacement("a\nHelo\nb", "a\nHello\nb"), { start: 5, end: 5, text: "l" });
    assert.deepEqual(minimalReplacement("same", "same"), { start: 4, end: 4, text: "" });
  });
});
