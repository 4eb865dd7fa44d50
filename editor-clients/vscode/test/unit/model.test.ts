// The pure parts: delta coalescing, reverse patches, the streaming-markdown split, launch args.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { launchArgs, launchEnv } from "../../src/client/launch";
import type { AgentEvent } from "../../src/protocol";
import { applyEvent, chatFromMessages, coalesceEvents, emptyChat } from "../../src/common/chatModel";
import { reversePatch } from "../../src/common/patch";
import { stablePrefixLength } from "../../src/webview/markdown";
import { prng } from "./helpers";

function randomRun(rand: () => number): AgentEvent[] {
  const events: AgentEvent[] = [{ type: "agent_start" }, { type: "message_start", message: { role: "assistant", content: [], api: "faux", provider: "faux", model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: 0 } }];
  const blocks = 1 + Math.floor(rand() * 3);
  for (let index = 0; index < blocks; index++) {
    const kind = rand() < 0.5 ? "text" : "thinking";
    events.push({ type: "message_update", assistantMessageEvent: { type: `${kind}_start`, contentIndex: index } });
    const n = Math.floor(rand() * 40);
    for (let i = 0; i < n; i++) {
      const delta = String.fromCharCode(32 + Math.floor(rand() * 90)).repeat(1 + Math.floor(rand() * 3));
      events.push({ type: "message_update", assistantMessageEvent: { type: `${kind}_delta`, contentIndex: index, delta } });
    }
  }
  events.push({ type: "agent_end", messages: [] });
  return events;
}

describe("coalesceEvents", () => {
  test("applying the merged events gives the same chat as applying every delta (200 seeded runs)", () => {
    const rand = prng(20261201);
    for (let run = 0; run < 200; run++) {
      const events = randomRun(rand);
      const merged = coalesceEvents(events);
      const a = emptyChat();
      const b = emptyChat();
      for (const e of events) applyEvent(a, e);
      for (const e of merged) applyEvent(b, e);
      const blocks = (c: typeof a) => c.items.map((i) => (i.kind === "assistant" ? i.blocks : []));
      assert.deepEqual(blocks(b), blocks(a));
      assert.ok(merged.length <= events.length);
    }
  });

  test("20,000 deltas of one text block cross as one event", () => {
    const events: AgentEvent[] = Array.from({ length: 20000 }, () => ({
      type: "message_update", assistantMessageEvent: { type: "text_delta", contentIndex: 0, delta: "ab " },
    }));
    assert.equal(coalesceEvents(events).length, 1);
  });
});

describe("activity (the status bar's text)", () => {
  test("while parallel tools run, the one still running is named after another ends", () => {
    const chat = emptyChat();
    const events: AgentEvent[] = [
      { type: "agent_start" },
      { type: "tool_execution_start", toolCallId: "r", toolName: "read", args: { path: "a" } },
      { type: "tool_execution_start", toolCallId: "b", toolName: "bash", args: { command: "sleep 1" } },
      { type: "tool_execution_end", toolCallId: "r", toolName: "read", result: { content: [] }, isError: false },
    ];
    for (const e of events) applyEvent(chat, e);
    assert.deepEqual(chat.activity, { kind: "tool", name: "bash" });
    applyEvent(chat, { type: "tool_execution_end", toolCallId: "b", toolName: "bash", result: { content: [] }, isError: false });
    assert.deepEqual(chat.activity, { kind: "streaming" });
  });
});

describe("tool cards", () => {
  /** One run whose model calls `name` with id `call_1` (the scripted model numbers calls per run). */
  function run(name: string, output: string): AgentEvent[] {
    const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    return [
      { type: "agent_start" },
      { type: "message_start", message: { role: "assistant", content: [], api: "faux", provider: "faux", model: "m", usage, stopReason: "toolUse", timestamp: 0 } },
      { type: "message_update", assistantMessageEvent: { type: "toolcall_start", contentIndex: 0, id: "call_1", toolName: name } },
      { type: "message_update", assistantMessageEvent: { type: "toolcall_end", contentIndex: 0, toolCall: { type: "toolCall", id: "call_1", name, arguments: { path: `${name}.txt` } } } },
      { type: "tool_execution_start", toolCallId: "call_1", toolName: name, args: { path: `${name}.txt` } },
      { type: "tool_execution_end", toolCallId: "call_1", toolName: name, result: { content: [{ type: "text", text: output }] }, isError: false },
      { type: "agent_end", messages: [] },
    ] as AgentEvent[];
  }

  test("a tool call id that comes again in a later run gets its own card; the earlier card stays as it was", () => {
    const chat = emptyChat();
    for (const e of [...run("read", "first result"), ...run("edit", "second result")]) applyEvent(chat, e);
    // What each assistant message shows, the way the view looks its cards up.
    const shown = chat.items.flatMap((item) => item.kind !== "assistant" ? [] : item.blocks.flatMap((b) =>
      b.kind === "toolCall" ? [chat.cards[b.cardKey]] : []));
    assert.deepEqual(shown.map((c) => [c.name, c.args.path, c.output]),
      [["read", "read.txt", "first result"], ["edit", "edit.txt", "second result"]]);
  });
});

describe("reversePatch", () => {
  test("recovers the file before an edit from the file after it and the edit's patch", () => {
    const before = "import sys\n\n\ndef greet(name: str) -> str:\n    return f\"Helo, {name}!\"\n\n\nif __name__:\n    pass\n";
    const after = before.replace("Helo", "Hello");
    const patch = "--- a\n+++ a\n@@ -3,4 +3,4 @@\n \n def greet(name: str) -> str:\n-    return f\"Helo, {name}!\"\n+    return f\"Hello, {name}!\"\n \n";
    assert.equal(reversePatch(after, patch), before);
  });

  test("handles several hunks that change the line count", () => {
    const before = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"].join("\n");
    const after = ["a", "B1", "B2", "c", "d", "e", "f", "g", "i", "j"].join("\n");
    const patch = "@@ -1,3 +1,4 @@\n a\n-b\n+B1\n+B2\n c\n@@ -7,3 +8,2 @@\n g\n-h\n i\n";
    assert.equal(reversePatch(after, patch), before);
  });
});

describe("stablePrefixLength", () => {
  test("splits after the last paragraph break outside a code fence", () => {
    const text = "para one\n\npara two\n\n```py\nx = 1\n\ny = 2\n";
    assert.equal(text.slice(0, stablePrefixLength(text)), "para one\n\npara two\n\n");
    assert.equal(stablePrefixLength("no break yet"), 0);
  });
});

describe("launch", () => {
  test("settings become daemon arguments; keys go to the environment only", () => {
    const settings = { command: "pi-rpc", args: ["--no-session"], provider: "anthropic", model: "claude-x", baseUrl: "",
      thinkingLevel: "high", tools: ["read", "bash"] };
    const args = launchArgs(settings, "/ws", true);
    assert.deepEqual(args, ["--cwd", "/ws", "--approve", "--provider", "anthropic", "--model", "claude-x", "--thinking", "high", "--tools", "read,bash", "--no-session"]);
    const env = launchEnv({ PATH: "/bin" }, { anthropic: "sk-secret" });
    assert.equal(env.ANTHROPIC_API_KEY, "sk-secret");
    assert.ok(!args.join(" ").includes("sk-secret"));
  });

  test("an untrusted workspace starts the daemon with --no-approve", () => {
    const settings = { command: "pi-rpc", args: [], provider: "", model: "", baseUrl: "", thinkingLevel: "", tools: [] };
    assert.deepEqual(launchArgs(settings, "/ws", false), ["--cwd", "/ws", "--no-approve"]);
  });
});

describe("chatFromMessages", () => {
  test("a compacted session shows its summary, then the turns it kept", () => {
    const chat = chatFromMessages([
      { role: "compactionSummary", summary: "## Goal\nGreet everyone", tokensBefore: 12345, timestamp: 1 },
      { role: "user", content: [{ type: "text", text: "next" }], timestamp: 2 },
      { role: "custom", customType: "todo", content: "shown note", display: true, timestamp: 3 },
      { role: "custom", customType: "state", content: "hidden", display: false, timestamp: 4 },
    ]);
    assert.deepEqual(
      chat.items.map((item) =>
        item.kind === "notice" || item.kind === "user" ? `${item.kind}: ${item.text}`
        : item.kind === "assistant" ? `assistant: ${item.blocks.map((b) => (b.kind === "toolCall" ? "" : b.text)).join("")}`
        : item.kind),
      ["notice: Earlier conversation summarised (12,345 tokens)", "assistant: ## Goal\nGreet everyone", "user: next", "user: shown note"],
    );
  });

  test("a stored bash execution shows as the user's command and its output", () => {
    const chat = chatFromMessages([
      { role: "bashExecution", command: "ls", output: "a.txt\n", exitCode: 0, cancelled: false, truncated: false, timestamp: 1 },
    ]);
    assert.deepEqual(
      chat.items.map((item) => (item.kind === "user" ? item.text : item.kind)),
      ["$ ls\na.txt\n"],
    );
  });
});
