// The smallest single replacement that turns one text into another (common prefix and suffix
// kept), so a write from the agent into an open editor moves no cursor or marker outside the
// part it changed, and undo restores exactly that part.

export interface Replacement {
  /** Offsets into the old text (UTF-16 code units, as VS Code's `positionAt` counts). */
  start: number;
  end: number;
  text: string;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

export function minimalReplacement(before: string, after: string): Replacement {
  const limit = Math.min(before.length, after.length);
  let prefix = 0;
  while (prefix < limit && before.charCodeAt(prefix) === after.charCodeAt(prefix)) prefix++;
  // Never split a surrogate pair, nor a CRLF (VS Code would not place a position inside either).
  if (prefix > 0 && (isHighSurrogate(before.charCodeAt(prefix - 1)) || before[prefix - 1] === "\r")) prefix--;
  let suffix = 0;
  while (suffix < limit - prefix && before.charCodeAt(before.length - 1 - suffix) === after.charCodeAt(after.length - 1 - suffix)) suffix++;
  const cut = before.length - suffix;
  if (suffix > 0 && cut > 0 && (isHighSurrogate(before.charCodeAt(cut - 1)) || before[cut - 1] === "\r")) suffix--;
  return { start: prefix, end: before.length - suffix, text: after.slice(prefix, after.length - suffix) };
}

/** Applies a replacement (what the editor does with it): the tests' oracle. */
export function applyReplacement(text: string, r: Replacement): string {
  return text.slice(0, r.start) + r.text + text.slice(r.end);
}
