// The chat webview: applies the host's event batches to a ChatState and redraws, once per
// animation frame, only the items whose revision changed.
import type { ImageInput } from "../protocol";
import type { HostToView, SendMode, ViewStatus, ViewToHost } from "../common/bridge";
import { applyEvent, type AssistantItem, type ChatItem, type ChatState, emptyChat } from "../common/chatModel";
import { applyHostEvent } from "../common/hostEvents";
import { handleBarClick, handleMessageClick, renderContextUsage, renderRewindPanel, userMessageActions } from "./checkpointBar";
import { StreamingMarkdown } from "./markdown";
import { actionButtons, renderNotice } from "./notice";
import { renderToolCard } from "./toolCard";
import { isAuthError, SET_API_KEY } from "../common/errors";
import { moveCardFocus, replaceCard } from "./cardFocus";
import { MentionPicker } from "./mentionPicker";
import { contextRefs, typedText } from "../common/mentions";

declare function acquireVsCodeApi(): { postMessage(message: ViewToHost): void };
const vscode = acquireVsCodeApi();
const post = (message: ViewToHost): void => vscode.postMessage(message);

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

// ---- layout ----------------------------------------------------------------------------------
const app = document.getElementById("app")!;
const header = el("div", "header");
const modelButton = el("button", "chip model", "model");
const thinkingButton = el("button", "chip thinking", "thinking");
const toolsButton = el("button", "chip tools");
toolsButton.append(el("span", "codicon codicon-tools"), "tools");
toolsButton.title = "Choose the active tools";
const policyButton = el("button", "chip policy", "approvals");
policyButton.title = "Approval policy: what Pi may do without asking";
thinkingButton.title = "Thinking level";
const stats = el("span", "stats");
const contextChip = el("span", "context-usage hidden");
const compactButton = el("button", "chip compact hidden", "compact");
compactButton.title = "Summarise the older turns to free the context window (Pi: Compact Conversation)";
header.append(modelButton, thinkingButton, toolsButton, policyButton, stats, contextChip, compactButton);
const problem = el("div", "problem hidden");
const list = el("div", "messages");
const empty = el("div", "empty");
empty.innerHTML = "<h2>Pi</h2><p>Ask Pi to read, change or run things in this folder.</p>" +
  "<p class='hint'><kbd>Enter</kbd> sends · <kbd>Shift</kbd>+<kbd>Enter</kbd> new line · <kbd>@</kbd> adds context: files, folders, symbols, problems, terminal, selection</p>";
const queueBox = el("div", "queue hidden");
const rewindBox = el("div", "rewind hidden");
const composer = el("div", "composer");
const attachments = el("div", "attachments");
const mentionBox = el("div", "mentions hidden");
const mentionChips = el("div", "mention-chips hidden");
const input = el("textarea", "input");
input.placeholder = "Ask Pi…  (@ to add context)";
input.rows = 3;
const controls = el("div", "controls");
const modeSelect = el("select", "mode");
modeSelect.title = "While Pi works, a message steers the run or waits as a follow-up";
modeSelect.append(new Option("Steer", "steer"), new Option("Follow up", "followUp"));
const sendButton = el("button", "send primary", "Send");
const stopButton = el("button", "stop", "Stop");
controls.append(modeSelect, el("span", "spacer"), stopButton, sendButton);
composer.append(mentionBox, mentionChips, attachments, input, controls);
app.append(header, problem, list, queueBox, rewindBox, composer);

// ---- state and rendering ---------------------------------------------------------------------
let chat: ChatState = emptyChat();
const nodes = new Map<string, { rev: number; node: HTMLElement; blocks?: (StreamingMarkdown | HTMLElement)[] }>();
let frameRequested = false;
let stickToBottom = true;
let images: ImageInput[] = [];

list.addEventListener("scroll", () => {
  stickToBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
});

function schedule(): void {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    render();
  });
}

/** The revision each drawn tool card shows: a card is redrawn only when its own revision moves. */
const cardRevs = new WeakMap<HTMLElement, number>();

/** Returns true when a block has work left for the next frame. */
function renderAssistant(item: AssistantItem, entry: { node: HTMLElement; blocks?: (StreamingMarkdown | HTMLElement)[] }): boolean {
  let behind = false;
  entry.blocks ??= [];
  item.blocks.forEach((block, i) => {
    let view = entry.blocks![i];
    if (block.kind === "toolCall") {
      const card = chat.cards[block.cardKey];
      // A sibling's update leaves this card's DOM alone: its open result, focus ring and focus.
      if (view instanceof HTMLElement && card && cardRevs.get(view) === card.rev) return;
      const fresh = card ? renderToolCard(card) : el("div");
      if (card) cardRevs.set(fresh, card.rev);
      if (view instanceof HTMLElement) replaceCard(view, fresh);
      else entry.node.append(fresh);
      entry.blocks![i] = fresh;
      return;
    }
    if (!view) {
      const host = block.kind === "thinking" ? el("details", "thinking") : el("div", "text markdown");
      if (block.kind === "thinking") {
        host.append(el("summary", undefined, "Thinking"));
        const inner = el("div", "markdown");
        host.append(inner);
        view = new StreamingMarkdown(inner);
      } else view = new StreamingMarkdown(host);
      entry.node.append(host);
      entry.blocks![i] = view;
    }
    if (view instanceof StreamingMarkdown && view.update(block.text)) behind = true;
  });
  entry.node.querySelector(":scope > .error")?.remove();
  if (item.stopReason === "error" || item.stopReason === "aborted") {
    const text = item.stopReason === "aborted" ? "Stopped." : item.errorMessage || "The model request failed.";
    const error = el("div", `error ${item.stopReason}`, text);
    // A rejected key is fixed from here: the error offers the command that sets one.
    if (item.stopReason === "error" && isAuthError(text)) error.append(actionButtons([SET_API_KEY]));
    entry.node.append(error);
  }
  return behind;
}

function createNode(item: ChatItem): HTMLElement {
  switch (item.kind) {
    case "user": {
      const node = el("div", "msg user");
      node.dataset.key = item.key;
      node.append(el("div", "bubble", typedText(item.text)));
      const refs = contextRefs(item.text);
      if (refs.length > 0) node.append(el("div", "context-refs", `with ${refs.map((r) => `@${r}`).join(" ")}`));
      if (item.restorable) node.append(userMessageActions());
      if (item.images > 0) node.append(el("div", "images", `${item.images} image${item.images > 1 ? "s" : ""} attached`));
      return node;
    }
    case "assistant":
      return el("div", "msg assistant");
    case "notice":
      return renderNotice(item);
    case "tool":
      return renderToolCard(item);
  }
}

/** Frame statistics, readable by the benchmark through the view's DOM. */
const renderStats = { frames: 0, totalMs: 0, maxMs: 0 };
const renderStatsNode = el("div", "hidden");
renderStatsNode.id = "render-stats";
document.body.append(renderStatsNode);

function render(): void {
  const started = performance.now();
  renderItems();
  const spent = performance.now() - started;
  renderStats.frames += 1;
  renderStats.totalMs += spent;
  renderStats.maxMs = Math.max(renderStats.maxMs, spent);
  renderStatsNode.textContent = JSON.stringify(renderStats);
}

function renderItems(): void {
  const seen = new Set<string>();
  for (const item of chat.items) {
    seen.add(item.key);
    let entry = nodes.get(item.key);
    if (!entry) {
      entry = { rev: -1, node: createNode(item) };
      nodes.set(item.key, entry);
      list.append(entry.node);
    }
    if (item.kind === "assistant") {
      // Tool cards inside an assistant message change without the message's own revision.
      const toolRev = item.blocks.reduce((n, b) => n + (b.kind === "toolCall" ? (chat.cards[b.cardKey]?.rev ?? 0) : 0), 0);
      const rev = item.rev * 100000 + toolRev;
      if (entry.rev !== rev) {
        // A block still catching up keeps a stale revision, so the next frame continues it.
        entry.rev = renderAssistant(item, entry) ? -1 : rev;
        if (entry.rev === -1) schedule();
      }
    }
  }
  for (const [key, entry] of nodes) {
    if (!seen.has(key)) {
      entry.node.remove();
      nodes.delete(key);
    }
  }
  empty.remove();
  if (chat.items.length === 0) list.append(empty);
  renderQueue();
  document.body.classList.toggle("running", chat.running);
  if (stickToBottom) list.scrollTop = list.scrollHeight;
}

function renderQueue(): void {
  const queued = [...chat.queue.steering.map((t) => ["steer", t]), ...chat.queue.followUp.map((t) => ["follow-up", t])];
  queueBox.classList.toggle("hidden", queued.length === 0);
  queueBox.innerHTML = "";
  if (queued.length === 0) return;
  const head = el("div", "queue-head", `Queued (${queued.length})`);
  const clear = el("button", "link clear-queue", "Clear");
  clear.onclick = () => post({ type: "clearQueue" });
  head.append(clear);
  queueBox.append(head);
  for (const [kind, text] of queued) {
    const row = el("div", "queue-item");
    row.append(el("span", "queue-kind", kind), el("span", undefined, text));
    queueBox.append(row);
  }
}

function setStatus(status: ViewStatus): void {
  modelButton.replaceChildren(el("span", `codicon codicon-${status.scripted ? "beaker" : "sparkle"}`), status.model || "no model");
  modelButton.title = "Select model";
  thinkingButton.textContent = `thinking: ${status.thinkingLevel || "off"}`;
  policyButton.replaceChildren(el("span", "codicon codicon-shield"), status.approvalPolicy ? `approvals: ${status.approvalPolicy}` : "approvals");
  stats.textContent = status.tokens > 0 ? `${status.tokens.toLocaleString()} tok · $${status.cost.toFixed(4)}` : "";
  renderContextUsage(contextChip, compactButton, status.contextUsage);
  problem.textContent = status.problem;
  problem.classList.toggle("hidden", !status.problem);
}

// ---- host messages ---------------------------------------------------------------------------
window.addEventListener("message", (message: MessageEvent<HostToView>) => {
  const data = message.data;
  switch (data.type) {
    case "events":
      for (const event of data.events) applyEvent(chat, event);
      schedule();
      return;
    case "restore":
      chat = data.chat;
      for (const entry of nodes.values()) entry.node.remove();
      nodes.clear();
      schedule();
      return;
    case "host":
      applyHostEvent(chat, data.event);
      schedule();
      return;
    case "status":
      setStatus(data.status);
      return;
    case "mentions":
      picker.show(data.requestId, data.items);
      return;
    case "focusInput":
      input.focus();
      return;
    case "sendInput":
      send();
      return;
    case "moveCard":
      moveCardFocus(list, data.delta);
      return;
    case "rewindPanel":
      renderRewindPanel(rewindBox, data.panel, post);
      return;
    case "setInput":
      input.value = data.text;
      input.focus();
      return;
    case "addContext":
      input.value = `${input.value}${input.value && !input.value.endsWith("\n") ? "\n" : ""}${data.text}`;
      input.focus();
      return;
    case "testQuery": {
      // A query sees what the user sees next: a frame already scheduled is drawn first, because a
      // hidden or headless webview may hold its animation frames back for a long while.
      if (frameRequested) {
        frameRequested = false;
        render();
      }
      const found = Array.from(document.querySelectorAll<HTMLElement>(data.selector));
      const first = found[0];
      const action = data.action;
      if (first && action && "click" in action) first.click();
      if ((first instanceof HTMLTextAreaElement || first instanceof HTMLInputElement) && action && "type" in action) {
        first.focus();
        first.value = action.type;
        first.selectionStart = first.selectionEnd = first.value.length;
        first.dispatchEvent(new Event("input"));
      }
      if (first && action && "key" in action) first.dispatchEvent(new KeyboardEvent("keydown", { key: action.key, bubbles: true }));
      const text = (n: HTMLElement): string =>
        (n instanceof HTMLTextAreaElement || n instanceof HTMLInputElement ? n.value : (n.textContent ?? ""));
      post({ type: "testResult", id: data.id, texts: found.map(text) });
      return;
    }
  }
});

// ---- composer --------------------------------------------------------------------------------
const picker = new MentionPicker(input, mentionBox, mentionChips, post);

function send(): void {
  const text = input.value.trim();
  if (!text && images.length === 0) return;
  const mode = chat.running ? (modeSelect.value as SendMode) : undefined;
  post({ type: "send", text, images, mode, mentions: picker.take(text) });
  input.value = "";
  images = [];
  renderAttachments();
  stickToBottom = true;
}

input.addEventListener("keydown", (e) => {
  if (picker.keydown(e)) return;
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});

input.addEventListener("paste", (e) => {
  for (const item of Array.from(e.clipboardData?.items ?? [])) {
    const file = item.kind === "file" ? item.getAsFile() : null;
    if (!file || !/^image\/(png|jpeg|gif|webp)$/.test(file.type)) continue;
    e.preventDefault();
    const reader = new FileReader();
    reader.onload = () => {
      // readAsDataURL: the result is a data: URL, "data:<type>;base64,<data>".
      const data = typeof reader.result === "string" ? (reader.result.split(",", 2)[1] ?? "") : "";
      images.push({ data, mimeType: file.type as ImageInput["mimeType"] });
      renderAttachments();
    };
    reader.readAsDataURL(file);
  }
});

function renderAttachments(): void {
  attachments.innerHTML = "";
  images.forEach((image, i) => {
    const chip = el("span", "attachment");
    const img = el("img");
    img.src = `data:${image.mimeType};base64,${image.data}`;
    const remove = el("button", "link", "×");
    remove.title = "Remove image";
    remove.onclick = () => {
      images.splice(i, 1);
      renderAttachments();
    };
    chip.append(img, remove);
    attachments.append(chip);
  });
}

sendButton.onclick = send;
stopButton.onclick = () => post({ type: "abort" });
modelButton.onclick = () => post({ type: "command", command: "pi.selectModel" });
thinkingButton.onclick = () => post({ type: "command", command: "pi.selectThinking" });
toolsButton.onclick = () => post({ type: "command", command: "pi.showTools" });
policyButton.onclick = () => post({ type: "command", command: "pi.approvalPolicy" });
compactButton.onclick = () => post({ type: "command", command: "pi.compact" });
rewindBox.addEventListener("click", (e) => handleBarClick(e.target as HTMLElement, post));

// Clicks inside rendered messages: code-block buttons and tool-card actions.
list.addEventListener("click", (e) => {
  const target = e.target as HTMLElement;
  if (target.dataset.command) {
    post({ type: "command", command: target.dataset.command });
    return;
  }
  if (handleMessageClick(target, post)) return;
  const block = target.closest(".code-block");
  if (block && target.matches(".code-copy, .code-insert")) {
    const code = block.querySelector("code")?.textContent ?? "";
    post(target.matches(".code-copy") ? { type: "copy", text: code } : { type: "insertCode", code });
    return;
  }
  const action = target.dataset.action;
  const card = target.closest<HTMLElement>(".tool");
  const toolCallId = card?.dataset.toolCallId;
  const cardKey = card?.dataset.cardKey;
  if (!toolCallId || !cardKey) return;
  if (action === "openLog" || action === "openDiff") post({ type: action, cardKey });
  if (action === "showApproval") post({ type: action, toolCallId });
  if (action === "approve") {
    const outcome = target.dataset.outcome as "allow" | "allowAlways" | "reject";
    const reason = card.querySelector<HTMLInputElement>(".approval-reason")?.value.trim();
    post({ type: "approve", toolCallId, outcome, reason: outcome === "reject" && reason ? reason : undefined });
    // The card waits for tool_approval_end to redraw; until then the buttons cannot answer twice.
    for (const button of card.querySelectorAll<HTMLButtonElement>(".approval-buttons button")) button.disabled = true;
  }
});

// Enter in a rejection's reason field rejects with that reason.
list.addEventListener("keydown", (e) => {
  const target = e.target as HTMLElement;
  if (e.key !== "Enter" || !target.matches(".approval-reason")) return;
  e.preventDefault();
  target.closest(".tool")?.querySelector<HTMLButtonElement>(".approve-reject")?.click();
});

// VS Code's own `focusedView` does not follow the focus into a webview; the chat's keys use this.
window.addEventListener("focus", () => post({ type: "focus", focused: true }));
window.addEventListener("blur", () => post({ type: "focus", focused: false }));

render();
post({ type: "ready" });
// The view may have been focused before this script ran (Pi: Open Chat focuses it), when no focus
// event will come: the keys' context starts from the focus as it is.
post({ type: "focus", focused: document.hasFocus() });
