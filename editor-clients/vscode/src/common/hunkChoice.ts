// Which hunks of a waiting edit or write the user keeps, and where each hunk's changed lines are on
// the "after" side of its diff (0-based), so the diff editor can mark them and toggle the one under
// the cursor. Every hunk is kept until the user rejects it; an answer names the kept ones only when
// some were rejected (protocol/PROTOCOL.md, "Keeping some hunks of an edit or write").
import type { DiffHunk } from "../protocol";

/** The after-side lines a hunk changes: its added lines, or for a pure deletion the line now there. */
export function changedLines(hunk: DiffHunk): number[] {
  const lines: number[] = [];
  let line = hunk.newStart - 1;
  let deletionAt: number | undefined;
  for (const row of hunk.text.split("\n").slice(1)) {
    if (row.startsWith("+")) lines.push(line++);
    else if (row.startsWith(" ")) line++;
    else if (row.startsWith("-") && deletionAt === undefined) deletionAt = line;
  }
  return lines.length > 0 ? lines : [Math.max(0, Math.min(deletionAt ?? line, hunk.newStart - 1 + hunk.newLines))];
}

/** The hunk whose after-side range holds `line`, else the nearest one (undefined when there are none). */
export function hunkAt(hunks: readonly DiffHunk[], line: number): DiffHunk | undefined {
  let best: DiffHunk | undefined;
  let distance = Infinity;
  for (const hunk of hunks) {
    const first = hunk.newStart - 1;
    const last = first + Math.max(hunk.newLines, 1) - 1;
    const d = line < first ? first - line : line > last ? line - last : 0;
    if (d < distance) [best, distance] = [hunk, d];
  }
  return best;
}

/** The hunks to name in the answer: undefined when every hunk is kept (a plain approval). */
export function keptForAnswer(hunks: readonly DiffHunk[], kept: ReadonlySet<number>): number[] | undefined {
  const indices = hunks.map((h) => h.index).filter((i) => kept.has(i));
  return indices.length === hunks.length ? undefined : indices;
}
