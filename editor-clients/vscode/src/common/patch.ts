// The file before an edit, from the file after it and the edit's unified diff (`details.patch`),
// so the diff editor can show what the agent changed.

interface Hunk { newStart: number; newCount: number; oldLines: string[] }

function parseHunks(patch: string): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | undefined;
  for (const line of patch.split("\n")) {
    const header = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (header) {
      current = { newStart: Number(header[1]), newCount: header[2] === undefined ? 1 : Number(header[2]), oldLines: [] };
      hunks.push(current);
    } else if (current && (line.startsWith(" ") || line.startsWith("-"))) {
      current.oldLines.push(line.slice(1));
    }
  }
  return hunks;
}

/** Undoes `patch` on `after`; hunks apply from the last to the first so line numbers stay valid. */
export function reversePatch(after: string, patch: string): string {
  const lines = after.split("\n");
  for (const hunk of parseHunks(patch).reverse()) {
    // A hunk that adds at line 0 of an empty range starts at index newStart (not newStart - 1).
    const start = hunk.newCount === 0 ? hunk.newStart : hunk.newStart - 1;
    lines.splice(start, hunk.newCount, ...hunk.oldLines);
  }
  return lines.join("\n");
}
