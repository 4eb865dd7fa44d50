// The host's own changes to the chat (notices, Stop, the daemon's death, a prompt the daemon never
// took) and the small pure pieces of the chat's behaviour around them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import type { AgentEvent } from "../../src/protocol";
import { addNotice, applyEvent, type ChatState, emptyChat, type ToolCard } from "../../src/common/chatModel";
import { isAuthError } from "../../src/common/errors";
import { applyHostEvent, DAEMON_TOPIC } from "../../src/common/hostEvents";
import { selectionContext } from "../../src/extension/selectionContext";
import { renderMarkdown } from "../../src/webview/markdown";
import { splitNotice } from "../../src/webview/toolCard";
import { EXT_ROOT } from "./helpers";

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };

/** A run that starts a bash call `id` (running, not ended). */
function startBash(id: string): AgentEvent[] {
  return [
    { type: "agent_start" },
    { type: "message_start", message: { role: "user", content: [{ type: "text", text: "go" }], timestamp: 0 } },
    { type: "message_start", message: { role: "assistant", content: [], api: "faux", provider: "faux", model: "m", usage, stopReason: "toolUse", timestamp: 0 } },
    { type: "message_update", assistantMessageEvent: { type: "toolcall_start", contentIndex: 0, id, name: "bash" } },
    { type: "message_update", assistantMessageEvent: { type: "toolcall_end", contentIndex: 0, toolCall: { type: "toolCall", id, name: "bash", arguments: { command: "sleep 30" } } } },
    { type: "tool_execution_start", toolCallId: id, toolName: "bash", args: { command: "sleep 30" } },
  ] as AgentEvent[];
}

function card(chat: ChatState, id: string): ToolCard {
  return chat.tools[id];
}

describe("card keys", () => {
  test("a notice only the view added does not shift the keys of the cards after it", () => {
    const host = emptyChat();
    const view = emptyChat();
    addNotice(view, "error", "No model is configured.");
    for (const event of startBash("call_1")) {
      applyEvent(host, event);
      applyEvent(view, event);
    }
    assert.equal(card(view, "call_1").key, card(host, "call_1").key);
    assert.ok(host.cards[card(view, "call_1").key], "the view's key finds the host's card (Open full log, Open diff)");
  });

  test("a notice from the host reaches both copies in order, and the keys stay the same", () => {
    const host = emptyChat();
    const view = emptyChat();
    const notice = { type: "notice", level: "error", text: "The Pi daemon was killed by SIGKILL.", topic: DAEMON_TOPIC } as const;
    applyHostEvent(host, notice);
    applyHostEvent(view, notice);
    for (const event of startBash("call_1")) {
      applyEvent(host, event);
      applyEvent(view, event);
    }
    assert.deepEqual(view.items.map((i) => i.key), host.items.map((i) => i.key));
  });
});

describe("host events", () => {
  test("the daemon's death ends the run: the running card is interrupted, Stop and Steer go", () => {
    const chat = emptyChat();
    for (const event of startBash("call_1")) applyEvent(chat, event);
    applyEvent(chat, { type: "queue_update", steering: ["faster"], followUp: [] });
    applyHostEvent(chat, { type: "daemon_exit" });
    assert.equal(card(chat, "call_1").status, "interrupted");
    assert.equal(chat.running, false);
    assert.deepEqual(chat.activity, { kind: "idle" });
    assert.deepEqual(chat.queue, { steering: [], followUp: [] });
  });

  test("a command ended by Stop is aborted, not failed; one that fails by itself is failed", () => {
    const chat = emptyChat();
    for (const event of startBash("call_1")) applyEvent(chat, event);
    applyHostEvent(chat, { type: "stop_requested" });
    applyEvent(chat, { type: "tool_execution_end", toolCallId: "call_1", toolName: "bash", result: { content: [{ type: "text", text: "Command aborted" }] }, isError: true });
    assert.equal(card(chat, "call_1").status, "aborted");
    applyEvent(chat, { type: "agent_end", messages: [] });
    for (const event of startBash("call_2")) applyEvent(chat, event);
    applyEvent(chat, { type: "tool_execution_end", toolCallId: "call_2", toolName: "bash", result: { content: [{ type: "text", text: "exit 1" }] }, isError: true });
    assert.equal(card(chat, "call_2").status, "error");
  });

  test("a call still preparing when Stop ends the run is aborted", () => {
    const chat = emptyChat();
    for (const event of startBash("call_1").slice(0, 5)) applyEvent(chat, event);
    applyHostEvent(chat, { type: "stop_requested" });
    applyEvent(chat, { type: "agent_end", messages: [] });
    assert.equal(card(chat, "call_1").status, "aborted");
  });

  test("a prompt the daemon refused (no model) stays in the chat", () => {
    const chat = emptyChat();
    applyHostEvent(chat, { type: "prompt_failed", text: "fix the bug", images: 0 });
    assert.deepEqual(chat.items.map((i) => (i.kind === "user" ? i.text : i.kind)), ["fix the bug"]);
  });

  test("the daemon's notices go once it runs again; the conversation's stay", () => {
    const chat = emptyChat();
    applyHostEvent(chat, { type: "notice", level: "error", text: "pi-rpc was not found", topic: DAEMON_TOPIC });
    applyHostEvent(chat, { type: "notice", level: "error", text: "429 Too Many Requests" });
    applyHostEvent(chat, { type: "dismiss", topic: DAEMON_TOPIC });
    assert.deepEqual(chat.items.map((i) => (i.kind === "notice" ? i.text : i.kind)), ["429 Too Many Requests"]);
  });
});

describe("what the chat offers", () => {
  test("a rejected key is recognised, so the chat offers Set API Key", () => {
    assert.ok(isAuthError("401 Unauthorized: invalid x-api-key"));
    assert.ok(isAuthError("Incorrect API key provided: sk-…"));
    assert.ok(!isAuthError("429 Too Many Requests: slow down"));
    assert.ok(!isAuthError("read 4010 bytes"));
  });

  test("Ask About Selection names the lines selected: whole lines end at the next line's start", () => {
    const at = (line: number, character: number) => ({ line, character });
    // Lines 1 and 2 selected by dragging down (or Shift+Down twice): the end is line 3, column 0.
    assert.match(selectionContext("a.py", "python", "x = 1\ny = 2\n", { start: at(0, 0), end: at(2, 0) }), /^@a\.py#L1-L2\n```python\nx = 1\ny = 2\n```\n$/);
    assert.match(selectionContext("a.py", "python", "x = 1\ny", { start: at(0, 0), end: at(1, 1) }), /^@a\.py#L1-L2\n/);
    assert.match(selectionContext("a.py", "python", "x", { start: at(4, 0), end: at(4, 1) }), /^@a\.py#L5\n/);
  });

  test("Ask About Selection's editor menu entry says it is Pi's", () => {
    const manifest = JSON.parse(readFileSync(join(EXT_ROOT, "package.json"), "utf8")) as {
      contributes: { commands: { command: string; title: string }[]; menus: Record<string, { command: string }[]> } };
    for (const entry of manifest.contributes.menus["editor/context"]) {
      const title = manifest.contributes.commands.find((c) => c.command === entry.command)?.title ?? "";
      assert.match(title, /^Pi: /, `${entry.command}: ${title}`);
    }
  });

  test("Markdown tables are wrapped and styled", () => {
    const html = renderMarkdown("| a | b |\n| - | - |\n| 1 | 2 |\n");
    assert.match(html, /<div class="table-wrap"><table>/);
    const css = readFileSync(join(EXT_ROOT, "media", "chat.css"), "utf8");
    assert.match(css, /\.markdown th, \.markdown td \{[^}]*border:/);
  });
});

describe("a truncated result's notice", () => {
  test("comes from the result's details: a command that prints such a line keeps it in its output", () => {
    const output = "line 1\nline 2\n\n[Showing lines 1-2 of 9. Full output: /tmp/pi-bash-1.log]";
    assert.deepEqual(splitNotice({ output }), { body: output, notice: "" });
    const truncated = splitNotice({ output, truncation: { truncated: true, totalLines: 9, outputLines: 2 }, fullOutputPath: "/tmp/pi-bash-1.log" });
    assert.deepEqual(truncated, { body: "line 1\nline 2", notice: "[Showing lines 1-2 of 9. Full output: /tmp/pi-bash-1.log]" });
  });

  test("the log's path is the one in the details, whatever the notice's text says", () => {
    const chat = emptyChat();
    for (const event of startBash("call_1")) applyEvent(chat, event);
    applyEvent(chat, { type: "tool_execution_end", toolCallId: "call_1", toolName: "bash", isError: false, result: {
      content: [{ type: "text", text: "tail\n\n[Showing lines 1-1 of 5. Full output: /elsewhere.log]" }],
      details: { truncation: { truncated: true, totalLines: 5, outputLines: 1 }, fullOutputPath: "/tmp/pi-bash-real.log" } } });
    assert.equal(card(chat, "call_1").fullOutputPath, "/tmp/pi-bash-real.log");
  });
});
