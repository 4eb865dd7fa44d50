// Checkpoints in the chat view: the restore and edit buttons of each user message, the message
// edited in place, the rewind bar above the composer (what a rewind would change, files /
// conversation / both, then any conflicts with their diffs and "Restore anyway"), and the
// context-usage chip with its Compact action. The host does the work; this only draws and asks.
import type { ContextUsage } from "../protocol";
import type { ViewToHost } from "../common/bridge";
import { contextLabel, restoreVerb, type RewindPanel } from "../common/checkpoints";

type Post = (message: ViewToHost) => void;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function iconButton(cls: string, icon: string, title: string, label?: string): HTMLButtonElement {
  const button = el("button", cls);
  button.title = title;
  button.append(el("span", `codicon codicon-${icon}`));
  if (label) button.append(` ${label}`);
  return button;
}

/** The buttons under a user message that is a restore point. */
export function userMessageActions(): HTMLElement {
  const actions = el("div", "msg-actions");
  actions.append(
    iconButton("link msg-edit", "edit", "Edit this message and send it again (files and conversation go back to before it)"),
    iconButton("link msg-restore", "discard", "Restore: put files and/or the conversation back to before this message"),
  );
  return actions;
}

/** Turns a user message into a text box: Send rewinds to before it and sends the new text. */
function startEditing(node: HTMLElement, post: Post): void {
  const bubble = node.querySelector<HTMLElement>(".bubble");
  const key = node.dataset.key;
  if (!bubble || !key || node.querySelector(".msg-editor")) return;
  const editor = el("div", "msg-editor");
  const box = el("textarea", "msg-edit-input");
  box.value = bubble.textContent ?? "";
  box.rows = Math.min(8, Math.max(2, box.value.split("\n").length));
  const buttons = el("div", "msg-edit-buttons");
  const cancel = el("button", "secondary msg-edit-cancel", "Cancel");
  const send = el("button", "primary msg-edit-send", "Send");
  buttons.append(cancel, send);
  editor.append(box, buttons);
  bubble.classList.add("hidden");
  node.querySelector(".msg-actions")?.classList.add("hidden");
  node.prepend(editor);
  const close = (): void => {
    editor.remove();
    bubble.classList.remove("hidden");
    node.querySelector(".msg-actions")?.classList.remove("hidden");
  };
  cancel.onclick = close;
  send.onclick = () => {
    const text = box.value.trim();
    if (!text) return;
    post({ type: "resend", key, text });
    close();
  };
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send.click();
    } else if (e.key === "Escape") close();
  });
  box.focus();
}

/** Clicks on a user message's buttons; true when the click was one of them. */
export function handleMessageClick(target: HTMLElement, post: Post): boolean {
  const button = target.closest<HTMLElement>(".msg-restore, .msg-edit");
  const node = button?.closest<HTMLElement>(".msg.user");
  if (!button || !node?.dataset.key) return false;
  if (button.matches(".msg-restore")) post({ type: "rewindAsk", key: node.dataset.key });
  else startEditing(node, post);
  return true;
}

function fileRow(label: string, verb: string, path: string, diff?: "conflict" | "unsaved"): HTMLElement {
  const row = el("div", "rewind-file");
  row.title = path;
  row.append(el("span", "rewind-verb", verb), el("span", "rewind-path", label));
  if (diff) {
    const open = el("button", "link rewind-diff", "diff");
    open.dataset.path = path;
    if (diff === "unsaved") open.dataset.unsaved = "true";
    row.append(open);
  }
  return row;
}

/** Draws the rewind bar (or hides it for `null`). */
export function renderRewindPanel(box: HTMLElement, panel: RewindPanel | null, post: Post): void {
  box.replaceChildren();
  box.classList.toggle("hidden", panel === null);
  if (!panel) return;
  const head = el("div", "rewind-head");
  const quoted = panel.messageText.length > 60 ? `${panel.messageText.slice(0, 57)}…` : panel.messageText;
  head.append(el("span", "codicon codicon-discard"), el("span", "rewind-title", `Back to before “${quoted}”`));
  const close = iconButton("link rewind-cancel", "close", "Close");
  close.onclick = () => post({ type: "rewindCancel" });
  head.append(close);
  box.append(head);
  if (panel.stage === "choose") {
    box.append(el("div", "rewind-note", panel.files.length > 0
      ? `Restoring files changes ${panel.files.length} file${panel.files.length > 1 ? "s" : ""}:` : "Pi changed no files from this message on."));
    for (const file of panel.files) box.append(fileRow(file.label, restoreVerb(file.change), file.path));
  } else {
    if (panel.conflicts.length > 0) {
      box.append(el("div", "rewind-note warning",
        `${panel.conflicts.length} file${panel.conflicts.length > 1 ? "s were" : " was"} changed after Pi's last change and left as ${panel.conflicts.length > 1 ? "they are" : "it is"}:`));
      for (const file of panel.conflicts) box.append(fileRow(file.label, "conflict", file.path, "conflict"));
    }
    if (panel.unsavedKept.length > 0) {
      box.append(el("div", "rewind-note warning", "Put back on disk; your unsaved changes stay in the editor:"));
      for (const file of panel.unsavedKept) box.append(fileRow(file.label, "unsaved", file.path, "unsaved"));
    }
  }
  for (const note of panel.notCaptured) box.append(el("div", "rewind-note muted", note));
  const buttons = el("div", "rewind-buttons");
  const button = (cls: string, text: string, message: ViewToHost, title?: string): void => {
    const b = el("button", cls, text);
    if (title) b.title = title;
    b.onclick = () => {
      for (const other of buttons.querySelectorAll("button")) other.disabled = true;
      post(message);
    };
    buttons.append(b);
  };
  if (panel.stage === "choose") {
    if (panel.files.length > 0) {
      button("primary rewind-both", "Files and conversation", { type: "rewind", restore: "both" });
      button("secondary rewind-files", "Files only", { type: "rewind", restore: "files" });
    }
    button("secondary rewind-conversation", "Conversation only", { type: "rewind", restore: "conversation" },
      "Continue from before this message in a new branch (the current one stays in its file)");
  } else if (panel.conflicts.length > 0) {
    button("primary rewind-force", "Restore anyway", { type: "rewindForce" }, "Replace the changed files too");
    button("secondary rewind-skip", panel.restore === "files" ? "Leave them" : "Leave them, go on",
      { type: "rewindSkip" }, "Keep the changed files as they are");
  }
  box.append(buttons);
}

/** The header's context chip and its Compact button. */
export function renderContextUsage(chip: HTMLElement, compact: HTMLElement, usage: ContextUsage | undefined): void {
  const label = contextLabel(usage);
  chip.classList.toggle("hidden", !label);
  compact.classList.toggle("hidden", !label);
  if (!label) return;
  chip.textContent = label.text;
  chip.title = label.title;
  chip.classList.toggle("high", label.percent >= 80);
  chip.style.setProperty("--used", `${Math.min(100, label.percent)}%`);
}

/** Clicks inside the rewind bar that open a conflict's diff. */
export function handleBarClick(target: HTMLElement, post: Post): void {
  const diff = target.closest<HTMLElement>(".rewind-diff");
  if (diff?.dataset.path) post({ type: "rewindDiff", path: diff.dataset.path, unsaved: diff.dataset.unsaved === "true" });
}
