// Markdown for streamed answers: markdown-it with highlight.js, code blocks with Copy/Insert
// buttons, and incremental rendering: the settled part of a growing text is rendered once, only
// the tail after the last paragraph break (outside a code fence) is redrawn each frame.
import hljs from "highlight.js/lib/common";
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({
  html: false,
  linkify: true,
  breaks: false,
  highlight(code: string, lang: string): string {
    try {
      if (lang && hljs.getLanguage(lang)) return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
    } catch {
      // fall through to plain text
    }
    return md.utils.escapeHtml(code);
  },
});

const defaultFence = md.renderer.rules.fence;
md.renderer.rules.fence = (tokens, idx, options, env, self) => {
  const lang = tokens[idx].info.trim().split(/\s+/)[0] ?? "";
  const inner = defaultFence(tokens, idx, options, env, self);
  return `<div class="code-block"><div class="code-bar"><span class="code-lang">${md.utils.escapeHtml(lang)}</span>` +
    `<button class="code-copy" title="Copy">Copy</button><button class="code-insert" title="Insert at cursor">Insert</button></div>${inner}</div>`;
};

// Tables are wrapped so a wide one scrolls inside the chat (chat.css styles `.table-wrap table`).
md.renderer.rules.table_open = () => '<div class="table-wrap"><table>\n';
md.renderer.rules.table_close = () => "</table></div>\n";

export function renderMarkdown(text: string): string {
  return md.render(text);
}

/** Index just after the last blank line that lies outside a code fence (0 when there is none). */
export function stablePrefixLength(text: string): number {
  let inFence = false;
  let stable = 0;
  let lineStart = 0;
  let previousBlank = false;
  while (lineStart <= text.length) {
    const newline = text.indexOf("\n", lineStart);
    if (newline === -1) break;
    const line = text.slice(lineStart, newline);
    if (/^\s{0,3}(```|~~~)/.test(line)) inFence = !inFence;
    const blank = line.trim() === "";
    if (blank && !inFence && !previousBlank && lineStart > 0) stable = newline + 1;
    previousBlank = blank;
    lineStart = newline + 1;
  }
  return stable;
}

/** Characters of newly settled Markdown rendered per frame, so a burst never freezes the view. */
const SETTLE_PER_FRAME = 24_000;

/** One growing Markdown text bound to a DOM element. */
export class StreamingMarkdown {
  private readonly settled: HTMLElement;
  private readonly tail: HTMLElement;
  private settledLength = 0;
  private text = "";
  private renderedTail = "";

  constructor(readonly element: HTMLElement) {
    this.settled = document.createElement("div");
    this.tail = document.createElement("div");
    element.append(this.settled, this.tail);
  }

  /** Shows `text`; returns true while work is left for the next frame (a large burst). */
  update(text: string): boolean {
    if (text !== this.text && !text.startsWith(this.text.slice(0, this.settledLength))) {
      this.settled.innerHTML = "";
      this.settledLength = 0;
    }
    this.text = text;
    const stable = stablePrefixLength(text);
    if (stable > this.settledLength) {
      // Settle at most SETTLE_PER_FRAME characters, cut at a paragraph break when there is one.
      const window = text.slice(0, this.settledLength + SETTLE_PER_FRAME);
      const cut = stable - this.settledLength > SETTLE_PER_FRAME ? stablePrefixLength(window) : stable;
      const end = cut > this.settledLength ? cut : stable;
      // Each settled piece is its own box that the browser may skip laying out while off screen.
      const piece = document.createElement("div");
      piece.className = "settled";
      piece.innerHTML = renderMarkdown(text.slice(this.settledLength, end));
      this.settled.append(piece);
      this.settledLength = end;
    }
    const behind = stable > this.settledLength;
    const tail = behind ? "" : text.slice(this.settledLength);
    if (tail !== this.renderedTail) {
      this.tail.innerHTML = tail ? renderMarkdown(tail) : "";
      this.renderedTail = tail;
    }
    return behind;
  }
}
