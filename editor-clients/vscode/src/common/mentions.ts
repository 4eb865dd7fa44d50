// `@` mentions in the chat input: what a mention is, which of the chosen ones a message still
// refers to, and the context text each becomes in the prompt. Pure (no VS Code imports): the host
// gathers the contents (extension/mentions.ts), the view picks and shows them (webview/mentionPicker.ts).

export type MentionKind = "file" | "folder" | "symbol" | "problems" | "terminal" | "selection" | "editor";

/** A 1-based, inclusive line range. */
export interface Lines {
  first: number;
  last: number;
}

export interface Mention {
  kind: MentionKind;
  /** What the message says for it, without the `@`: `src/a.py`, `src/`, `symbol:greet`, `problems`. */
  token: string;
  /** The picker's second column (a symbol's file and line, a problem count, …). */
  detail?: string;
  /** Workspace-relative path (file, folder, symbol, selection, editor; problems of one file). */
  path?: string;
  /** A symbol's name as its provider gave it (the token has it without spaces). */
  name?: string;
  /** The lines it refers to (a selection, a symbol's range). */
  lines?: Lines;
}

/** The largest part of one file (or terminal output, folder listing) a mention puts in the prompt. */
export const CONTEXT_CHAR_CAP = 20_000;

/** The `@word` the caret is in, as the picker filters by it (`undefined`: not in a mention). */
export function mentionQuery(beforeCaret: string): string | undefined {
  return /(?:^|\s)@([\w./:#-]*)$/.exec(beforeCaret)?.[1];
}

/** The text with the `@query` before the caret replaced by the chosen mention's token. */
export function insertMention(text: string, caret: number, mention: Mention): { text: string; caret: number } {
  const before = text.slice(0, caret).replace(/@[\w./:#-]*$/, `@${mention.token} `);
  return { text: before + text.slice(caret), caret: before.length };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** Whether the message still says `@token` (as a whole word: `@src/a.py` is not in `@src/a.pyc`). */
export function mentions(text: string, token: string): boolean {
  return new RegExp(`(?:^|\\s)@${escapeRegExp(token)}(?=$|[\\s,;:!?)]|\\.(?:$|\\s))`).test(text);
}

/** The chosen mentions the message still refers to, each once, in the order chosen. */
export function liveMentions(text: string, chosen: readonly Mention[]): Mention[] {
  const seen = new Set<string>();
  return chosen.filter((m) => {
    if (seen.has(m.token) || !mentions(text, m.token)) return false;
    seen.add(m.token);
    return true;
  });
}

/** The text without the `@token` of a chip the user removed. */
export function removeMention(text: string, token: string): string {
  return text.replace(new RegExp(`(^|\\s)@${escapeRegExp(token)}(?=$|\\s)\\s?`), "$1");
}

/** `text` cut to `cap` characters at a line end, saying how much was left out. */
export function capText(text: string, cap = CONTEXT_CHAR_CAP): string {
  if (text.length <= cap) return text;
  const cut = text.lastIndexOf("\n", cap);
  const kept = text.slice(0, cut > 0 ? cut : cap);
  const rest = text.slice(kept.length).split("\n").filter((l, i) => i > 0 || l).length;
  return `${kept}\n[… ${rest} more lines not included]`;
}

/** Lines prefixed with their 1-based numbers (`first` is the number of the first one), as `read` shows them. */
export function numberLines(text: string, first = 1): string {
  const lines = text.replace(/\n$/, "").split("\n");
  const width = String(first + lines.length - 1).length;
  return lines.map((line, i) => `${String(first + i).padStart(width)}  ${line}`).join("\n");
}

/** One piece of context, as the daemon's ACP front end wraps an editor's embedded resource. */
export function contextBlock(ref: string, body: string): string {
  return `<context ref="${ref}">\n${body.replace(/\n$/, "")}\n</context>`;
}

export interface Problem {
  path: string;
  /** 1-based. */
  line: number;
  severity: "error" | "warning" | "info" | "hint";
  message: string;
  source?: string;
}

/** Diagnostics as a list the model reads: `path:line: severity message (source)`. */
export function formatProblems(problems: readonly Problem[]): string {
  if (problems.length === 0) return "No problems.";
  const rank = { error: 0, warning: 1, info: 2, hint: 3 };
  return [...problems]
    .sort((a, b) => rank[a.severity] - rank[b.severity] || a.path.localeCompare(b.path) || a.line - b.line)
    .map((p) => `${p.path}:${p.line}: ${p.severity} ${p.message.replace(/\s*\n\s*/g, " ")}${p.source ? ` (${p.source})` : ""}`)
    .join("\n");
}

/** The message and, after it, one block per mention (the order of `<context>` blocks is the chips'). */
export function withContext(text: string, blocks: readonly string[]): string {
  return blocks.length === 0 ? text : [text, ...blocks].join("\n\n");
}

/** The refs of the context blocks after a sent message's words (`src/a.py`, `problems`, …). */
export function contextRefs(prompt: string): string[] {
  const typed = typedText(prompt);
  if (typed === prompt) return [];
  return Array.from(prompt.slice(typed.length).matchAll(/\n\n<context ref="([^"]*)">\n/g), (m) => m[1]);
}

/** What the chat shows of a sent message: the words typed, without the context blocks after them. */
export function typedText(prompt: string): string {
  const start = prompt.search(/\n\n<context ref="[^"]*">\n/);
  if (start < 0) return prompt;
  // Only when everything from there on is context blocks: a message that merely quotes one stays whole.
  const tail = prompt.slice(start + 2);
  return /^(?:<context ref="[^"]*">\n[\s\S]*?\n<\/context>(?:\n\n|$))+$/.test(tail) ? prompt.slice(0, start) : prompt;
}
