// Where each hunk of an approval's diff is on the "after" side, which one the cursor is on, and
// what the answer names, on hunks as the daemon numbers them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { changedLines, hunkAt, keptForAnswer } from "../../src/common/hunkChoice";
import type { DiffHunk } from "../../src/protocol";

const FIRST: DiffHunk = { index: 0, oldStart: 1, oldLines: 6, newStart: 1, newLines: 6,
  text: "@@ -1,6 +1,6 @@\n line 1\n-line 2\n+line two\n line 3\n line 4\n line 5\n line 6\n" };
const SECOND: DiffHunk = { index: 1, oldStart: 24, oldLines: 7, newStart: 24, newLines: 6,
  text: "@@ -24,7 +24,6 @@\n line 24\n line 25\n line 26\n line 27\n-line 28\n line 29\n line 30\n" };

test("a hunk's changed lines are its added lines, or where a deletion was", () => {
  assert.deepEqual(changedLines(FIRST), [1]);
  assert.deepEqual(changedLines(SECOND), [27]);
});

test("the cursor's hunk is the one whose range holds it, else the nearest", () => {
  assert.equal(hunkAt([FIRST, SECOND], 1)?.index, 0);
  assert.equal(hunkAt([FIRST, SECOND], 25)?.index, 1);
  assert.equal(hunkAt([FIRST, SECOND], 20)?.index, 1);
  assert.equal(hunkAt([], 3), undefined);
});

test("the answer names the kept hunks only when some were rejected", () => {
  assert.equal(keptForAnswer([FIRST, SECOND], new Set([0, 1])), undefined);
  assert.deepEqual(keptForAnswer([FIRST, SECOND], new Set([1])), [1]);
  assert.deepEqual(keptForAnswer([FIRST, SECOND], new Set()), []);
});
