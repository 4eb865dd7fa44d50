// What "Pi: Ask About Selection" puts in the chat's input: the file and line range, then the code.

/** A selection's lines, as VS Code reports them (0-based; `character` 0 at the end means the line
 * before is the last one selected: a selection of whole lines ends at the next line's start). */
export interface LineRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/** The 1-based first and last line the user selected. */
export function selectedLines(range: LineRange): [number, number] {
  const last = range.end.line > range.start.line && range.end.character === 0 ? range.end.line - 1 : range.end.line;
  return [range.start.line + 1, last + 1];
}

export function selectionContext(path: string, languageId: string, code: string, range: LineRange): string {
  const [first, last] = selectedLines(range);
  const lines = first === last ? `#L${first}` : `#L${first}-L${last}`;
  return `@${path}${lines}\n\`\`\`${languageId}\n${code.replace(/\n$/, "")}\n\`\`\`\n`;
}
