// The composer's `@` picker and the chips of the mentions chosen: typing `@` asks the host for
// rows (files, folders, symbols, problems, terminal, selection, editor), arrows move, Enter or Tab
// picks one, Escape closes. A chosen mention is `@token` in the text and a chip above it; the
// chip's × takes both away. On send, the mentions the text still names go with the message.
import type { ViewToHost } from "../common/bridge";
import { insertMention, liveMentions, type Mention, type MentionKind, mentionQuery, removeMention } from "../common/mentions";

const ICONS: Record<MentionKind, string> = {
  file: "file", folder: "folder", symbol: "symbol-method", problems: "warning", terminal: "terminal",
  selection: "selection", editor: "go-to-file",
};

export class MentionPicker {
  private request = 0;
  private rows: Mention[] = [];
  private index = 0;
  private chosen: Mention[] = [];

  constructor(
    private readonly input: HTMLTextAreaElement,
    private readonly box: HTMLElement,
    private readonly chips: HTMLElement,
    private readonly post: (message: ViewToHost) => void,
  ) {
    input.addEventListener("input", () => this.onInput());
  }

  private onInput(): void {
    const query = mentionQuery(this.input.value.slice(0, this.input.selectionStart));
    if (query === undefined) this.close();
    else this.post({ type: "mentions", requestId: ++this.request, query });
    this.drawChips();
  }

  /** The host's rows for the latest query (older answers are dropped). */
  show(requestId: number, rows: Mention[]): void {
    if (requestId !== this.request) return;
    this.rows = rows;
    this.index = 0;
    this.draw();
  }

  /** Handles a key while the picker is open; true when it was the picker's. */
  keydown(e: KeyboardEvent): boolean {
    if (this.rows.length === 0) return false;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      this.index = (this.index + (e.key === "ArrowDown" ? 1 : this.rows.length - 1)) % this.rows.length;
      this.draw();
    } else if (e.key === "Enter" || e.key === "Tab") this.accept(this.rows[this.index]);
    else if (e.key === "Escape") this.close();
    else return false;
    e.preventDefault();
    return true;
  }

  /** The mentions the message still names, for the send; the chips are cleared. */
  take(text: string): Mention[] {
    const live = liveMentions(text, this.chosen);
    this.chosen = [];
    this.close();
    this.drawChips();
    return live;
  }

  private accept(mention: Mention): void {
    const next = insertMention(this.input.value, this.input.selectionStart, mention);
    this.input.value = next.text;
    this.input.selectionStart = this.input.selectionEnd = next.caret;
    this.chosen.push(mention);
    this.close();
    this.drawChips();
    this.input.focus();
  }

  private close(): void {
    this.rows = [];
    this.draw();
  }

  private draw(): void {
    this.box.replaceChildren();
    this.box.classList.toggle("hidden", this.rows.length === 0);
    this.rows.forEach((mention, i) => {
      const row = document.createElement("div");
      row.className = `mention${i === this.index ? " selected" : ""}`;
      row.dataset.kind = mention.kind;
      const icon = document.createElement("span");
      icon.className = `codicon codicon-${ICONS[mention.kind]}`;
      const name = document.createElement("span");
      name.className = "mention-token";
      name.textContent = mention.token;
      row.append(icon, name);
      if (mention.detail) {
        const detail = document.createElement("span");
        detail.className = "mention-detail";
        detail.textContent = ` ${mention.detail}`;
        row.append(detail);
      }
      row.onmousedown = (e) => {
        e.preventDefault();
        this.accept(mention);
      };
      this.box.append(row);
    });
  }

  /** A chip per chosen mention the text still names (typing its `@token` away drops it). */
  private drawChips(): void {
    this.chosen = liveMentions(this.input.value, this.chosen);
    this.chips.replaceChildren(...this.chosen.map((mention) => {
      const chip = document.createElement("span");
      chip.className = "mention-chip";
      chip.dataset.kind = mention.kind;
      chip.title = mention.detail ?? mention.token;
      const icon = document.createElement("span");
      icon.className = `codicon codicon-${ICONS[mention.kind]}`;
      const remove = document.createElement("button");
      remove.className = "link";
      remove.textContent = "×";
      remove.title = "Remove";
      remove.onclick = () => {
        this.input.value = removeMention(this.input.value, mention.token);
        this.drawChips();
      };
      chip.append(icon, mention.token, remove);
      return chip;
    }));
    this.chips.classList.toggle("hidden", this.chosen.length === 0);
  }
}
