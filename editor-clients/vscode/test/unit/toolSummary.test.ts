// The line a tool card's header shows: what the call acts on, from its arguments as parsed so far.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ToolCard } from "../../src/common/chatModel";
import { toolSummary } from "../../src/webview/toolCard";

function readCard(args: Record<string, unknown>): ToolCard {
  return { kind: "tool", key: "tool:0", rev: 0, toolCallId: "t1", name: "read", args, status: "running", output: "" };
}

test("a read card names the file and the line it starts at", () => {
  assert.equal(toolSummary(readCard({ path: "src/greet.py", offset: 12 })), "src/greet.py:12");
  assert.equal(toolSummary(readCard({ path: "src/greet.py", offset: "12" })), "src/greet.py:12");
  assert.equal(toolSummary(readCard({ path: "src/greet.py" })), "src/greet.py");
});

test("an offset that is neither a number nor text is left out, not shown as [object Object]", () => {
  assert.equal(toolSummary(readCard({ path: "src/greet.py", offset: { line: 12 } })), "src/greet.py");
});
