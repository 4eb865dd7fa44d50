// The chat's side of checkpoints: which user messages are restore points and which checkpoint
// each is, the files a rewind would put back, a conflict's restored text for the diff editor, and
// the context window's share.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CheckpointInfo, Message } from "../../src/protocol";
import { applyEvent, chatFromMessages, emptyChat, type UserItem } from "../../src/common/chatModel";
import { checkpointOf, contextLabel, filesToRestore, restoredText, restoreVerb } from "../../src/common/checkpoints";

const user = (text: string): Message => ({ role: "user", content: [{ type: "text", text }], timestamp: 0 });
const shell = (command: string): Message =>
  ({ role: "bashExecution", command, output: "ok\n", exitCode: 0, cancelled: false, truncated: false, timestamp: 0 }) as unknown as Message;

function checkpoint(entryId: string, text: string, files: CheckpointInfo["files"] = [], notCaptured: string[] = []): CheckpointInfo {
  return { entryId, text, timestamp: "", files, notCaptured };
}

const userKeys = (chat: ReturnType<typeof emptyChat>): string[] =>
  chat.items.filter((i): i is UserItem => i.kind === "user").map((i) => i.key);

describe("restore points in the chat", () => {
  test("typed messages are restore points, a shell command shown as the user's turn is not", () => {
    const chat = chatFromMessages([user("first"), shell("ls"), user("second")]);
    const users = chat.items.filter((i): i is UserItem => i.kind === "user");
    assert.deepEqual(users.map((u) => [u.text, u.restorable === true]), [["first", true], ["$ ls\nok\n", false], ["second", true]]);
  });

  test("a message that streams in is a restore point too", () => {
    const chat = emptyChat();
    applyEvent(chat, { type: "message_start", message: user("live") });
    assert.equal((chat.items[0] as UserItem).restorable, true);
  });

  test("each message maps to its checkpoint from the end (the listing is the most recent first)", () => {
    const chat = chatFromMessages([user("one"), shell("ls"), user("two"), user("three")]);
    const [one, , two, three] = userKeys(chat);
    const listing = [checkpoint("c3", "three"), checkpoint("c2", "two"), checkpoint("c1", "one")];
    assert.equal(checkpointOf(chat, one, listing), 2);
    assert.equal(checkpointOf(chat, two, listing), 1);
    assert.equal(checkpointOf(chat, three, listing), 0);
  });

  test("a compacted chat, which holds only the newest messages, still finds them", () => {
    const chat = chatFromMessages([user("kept one"), user("kept two")]);
    const [keptOne] = userKeys(chat);
    const listing = [checkpoint("c4", "kept two"), checkpoint("c3", "kept one"), checkpoint("c2", "old"), checkpoint("c1", "older")];
    assert.equal(checkpointOf(chat, keptOne, listing), 1);
  });

  test("a chat out of step with the daemon gives no checkpoint rather than the wrong one", () => {
    const chat = chatFromMessages([user("one"), user("two")]);
    const [one] = userKeys(chat);
    assert.equal(checkpointOf(chat, one, [checkpoint("c2", "two"), checkpoint("c1", "something else")]), undefined);
    assert.equal(checkpointOf(chat, one, [checkpoint("c2", "two")]), undefined);
    const shellKey = userKeys(chatFromMessages([shell("ls")]))[0];
    assert.equal(checkpointOf(chatFromMessages([shell("ls")]), shellKey, [checkpoint("c1", "$ ls\nok\n")]), undefined);
  });
});

describe("files a rewind puts back", () => {
  const listing = [
    checkpoint("c2", "second", [{ path: "/ws/a.txt", change: "modified" }, { path: "/ws/new.txt", change: "modified" }]),
    checkpoint("c1", "first", [
      { path: "/ws/new.txt", change: "created" }, { path: "/ws/a.txt", change: "modified" },
      { path: "/ws/gone.txt", change: "deleted" }, { path: "/elsewhere/x", change: "modified" },
    ]),
  ];

  test("to before the latest run: only that run's files", () => {
    assert.deepEqual(filesToRestore(listing, 0, "/ws").map((f) => [f.label, f.change]), [["a.txt", "modified"], ["new.txt", "modified"]]);
  });

  test("to before an earlier run: its files and every later run's, each as the earliest run changed it", () => {
    const files = filesToRestore(listing, 1, "/ws");
    assert.deepEqual(files.map((f) => [f.label, f.change, restoreVerb(f.change)]), [
      ["/elsewhere/x", "modified", "restore"], ["a.txt", "modified", "restore"],
      ["gone.txt", "deleted", "bring back"], ["new.txt", "created", "remove"],
    ]);
  });
});

describe("a conflict's restored text (for the diff editor)", () => {
  // Both diffs are what the daemon's difflib writes (`---` the file now, `+++` the checkpoint).
  test("hunks apply forwards: changed, removed and added lines", () => {
    const now = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
    const diff = "--- /w/a.txt (now)\n+++ /w/a.txt (checkpoint)\n@@ -1,6 +1,6 @@\n line 1\n line 2\n-line 3\n+line three\n line 4\n line 5\n line 6\n" +
      "@@ -12,9 +12,9 @@\n line 12\n line 13\n line 14\n-line 15\n line 16\n line 17\n line 18\n line 19\n line 20\n+line 21\n";
    const expected = now.replace("line 3\n", "line three\n").replace("line 15\n", "").replace("line 20\n", "line 20\nline 21\n");
    assert.equal(restoredText(now, { path: "/w/a.txt", diff }), expected);
  });

  test("the user's edit against the agent's version", () => {
    const diff = "--- /w/a.txt (now)\n+++ /w/a.txt (checkpoint)\n@@ -1,2 +1,2 @@\n-user edit\n+agent\n keep\n";
    assert.equal(restoredText("user edit\nkeep\n", { path: "/w/a.txt", diff }), "agent\nkeep\n");
  });

  test("a file the rewind removes restores to nothing; a binary one has no text", () => {
    assert.equal(restoredText("made\n", { path: "/w/n", diff: "--- /w/n (now)\n+++ /dev/null\n@@ -1 +0,0 @@\n-made\n" }), "");
    assert.equal(restoredText("", { path: "/w/b", diff: "Binary files /w/b (now) and /w/b (checkpoint) differ\n" }), undefined);
  });
});

describe("context usage", () => {
  test("a share of the model's window, with the counts in the tooltip", () => {
    assert.deepEqual(contextLabel({ tokens: 43_210, contextWindow: 200_000, percent: 21.6 }),
      { text: "context 22%", title: "Context in use: 43,210 of 200,000 tokens (200k window)", percent: 22 });
    assert.equal(contextLabel({ tokens: 990_000, contextWindow: 1_000_000, percent: 99 })?.percent, 99);
  });

  test("unknown right after a compaction, absent without a model", () => {
    assert.equal(contextLabel({ tokens: null, contextWindow: 128_000, percent: null })?.text, "context ?/128k");
    assert.equal(contextLabel(undefined), undefined);
  });
});
