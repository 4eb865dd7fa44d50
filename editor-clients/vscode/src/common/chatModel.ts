// The chat as the user sees it, built from agent events by one pure reducer. The webview renders
// it; the unit tests replay transcripts through it. Each item carries a revision so the renderer
// redraws only what changed since its last frame.
import type { AgentEvent, ApprovalRequest, AssistantMessageEvent, Message } from "../protocol";

export type Block =
  | { kind: "text"; text: string }
  | { kind: "thinking"; text: string }
  /** `cardKey` names the card in `ChatState.cards` (a tool call id may come again in a later run). */
  | { kind: "toolCall"; toolCallId: string; cardKey: string };

/** `aborted`: ended by the user's Stop; `interrupted`: the daemon died while the call ran. */
export type ToolStatus = "pending" | "running" | "done" | "error" | "aborted" | "interrupted";

export interface Truncation {
  truncated: boolean;
  truncatedBy?: string;
  totalLines?: number;
  outputLines?: number;
}

/** What a card shows while its call waits for the user: the request, without the file texts. */
export interface CardApproval {
  title: string;
  command?: string;
  /** The unified diff of an edit or write, for the card (the diff editor shows the whole files). */
  patch?: string;
  /** Whether a before/after diff can be opened. */
  hasDiff: boolean;
  /** What "Allow Always" adds, e.g. `bash(npm test:*)` or `edit`. */
  suggestedRule: string;
}

export interface ToolCard {
  kind: "tool";
  key: string;
  rev: number;
  toolCallId: string;
  name: string;
  /** The arguments as parsed so far (they fill in while the model writes them). */
  args: Record<string, unknown>;
  status: ToolStatus;
  /** Text output: live tail while running, the result once done. */
  output: string;
  truncation?: Truncation;
  fullOutputPath?: string;
  patch?: string;
  durationMs?: number;
  /** Set while the call waits for the user's approval. */
  approval?: CardApproval;
  /** How the last approval of this call ended (`allow`, `reject`, `cancelled`, …). */
  approvalOutcome?: string;
  /** The user pressed Stop while this call was unfinished: its failure is an abort. */
  stopRequested?: boolean;
}

export interface UserItem {
  kind: "user"; key: string; rev: number; text: string; images: number;
  /** A message the user typed: a restore point (not a shell command or an extension's message). */
  restorable?: boolean;
}
export interface AssistantItem {
  kind: "assistant";
  key: string;
  rev: number;
  blocks: Block[];
  /** contentIndex → index in `blocks`. */
  indexMap: Record<number, number>;
  stopReason?: string;
  errorMessage?: string;
  model?: string;
}
/** A button on a notice: runs a VS Code command (e.g. `pi.setApiKey`, `pi.restart`). */
export interface NoticeAction { label: string; command: string }
export interface NoticeItem {
  kind: "notice"; key: string; rev: number; level: "info" | "error"; text: string;
  /** Notices of one topic (e.g. `daemon`) are dismissed together once they no longer hold. */
  topic?: string;
  actions?: NoticeAction[];
}
export type ChatItem = UserItem | AssistantItem | ToolCard | NoticeItem;

export interface ChatState {
  items: ChatItem[];
  /** Every tool card, by its key. */
  cards: Record<string, ToolCard>;
  /** The newest card of each tool call id: the one the daemon's events about that id update. */
  tools: Record<string, ToolCard>;
  running: boolean;
  /** What the run is doing now, for the status bar: idle, streaming, or a tool's name. */
  activity: { kind: "idle" } | { kind: "streaming" } | { kind: "tool"; name: string } | { kind: "approval"; name: string };
  queue: { steering: string[]; followUp: string[] };
  nextKey: number;
  /** Notices count apart from messages and cards, so a notice only one side of the bridge added
   * (the webview's own) can never shift the card keys the two sides share. */
  nextNoticeKey?: number;
}

export function emptyChat(): ChatState {
  return { items: [], cards: {}, tools: {}, running: false, activity: { kind: "idle" }, queue: { steering: [], followUp: [] }, nextKey: 0 };
}

function key(state: ChatState, prefix: string): string {
  state.nextKey += 1;
  return `${prefix}${state.nextKey}`;
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((c): c is { type: "text"; text: string } => typeof c === "object" && c !== null && (c as { type?: unknown }).type === "text")
    .map((c) => c.text)
    .join("\n");
}

function imageCount(content: unknown): number {
  return Array.isArray(content) ? content.filter((c) => (c as { type?: unknown }).type === "image").length : 0;
}

function currentAssistant(state: ChatState): AssistantItem | undefined {
  for (let i = state.items.length - 1; i >= 0; i--) {
    const item = state.items[i];
    if (item.kind === "assistant") return item;
    if (item.kind === "user") return undefined;
  }
  return undefined;
}

/** A new card for a call the model starts (its id may repeat an earlier run's: that card stays). */
function newToolCard(state: ChatState, toolCallId: string, name: string): ToolCard {
  const card: ToolCard = { kind: "tool", key: key(state, "tool:"), rev: 0, toolCallId, name, args: {}, status: "pending", output: "" };
  state.cards[card.key] = card;
  state.tools[toolCallId] = card;
  return card;
}

/** The card an event about `toolCallId` updates. */
function toolCard(state: ChatState, toolCallId: string, name: string): ToolCard {
  return state.tools[toolCallId] ?? newToolCard(state, toolCallId, name);
}

function applyResult(card: ToolCard, result: { content?: unknown; details?: unknown }): void {
  card.output = textOf(result.content);
  const details = (result.details ?? {}) as Record<string, unknown>;
  const truncation = details.truncation as Truncation | undefined;
  card.truncation = truncation?.truncated ? truncation : undefined;
  if (typeof details.fullOutputPath === "string") card.fullOutputPath = details.fullOutputPath;
  if (typeof details.patch === "string") card.patch = details.patch;
}

function applyAssistantEvent(state: ChatState, item: AssistantItem, event: AssistantMessageEvent): void {
  item.rev += 1;
  switch (event.type) {
    case "text_start":
    case "thinking_start":
      item.indexMap[event.contentIndex] = item.blocks.push({ kind: event.type === "text_start" ? "text" : "thinking", text: "" }) - 1;
      return;
    case "text_delta":
    case "thinking_delta": {
      const block = item.blocks[item.indexMap[event.contentIndex]];
      if (block && block.kind !== "toolCall") block.text += event.delta;
      return;
    }
    case "text_end":
    case "thinking_end": {
      const block = item.blocks[item.indexMap[event.contentIndex]];
      if (block && block.kind !== "toolCall") block.text = event.content;
      return;
    }
    case "toolcall_start": {
      const card = newToolCard(state, event.id, event.toolName);
      item.indexMap[event.contentIndex] = item.blocks.push({ kind: "toolCall", toolCallId: event.id, cardKey: card.key }) - 1;
      return;
    }
    case "toolcall_delta": {
      const block = item.blocks[item.indexMap[event.contentIndex]];
      if (block?.kind === "toolCall" && event.arguments && typeof event.arguments === "object") {
        const card = state.cards[block.cardKey];
        if (!card) return;
        card.args = event.arguments as Record<string, unknown>;
        card.rev += 1;
      }
      return;
    }
    case "toolcall_end": {
      const card = toolCard(state, event.toolCall.id, event.toolCall.name);
      card.args = event.toolCall.arguments ?? {};
      card.rev += 1;
      return;
    }
    case "error":
      item.stopReason = event.reason;
      item.errorMessage = event.errorMessage ?? undefined;
      return;
    default:
      return;
  }
}

function startMessage(state: ChatState, message: Message): void {
  if (message.role === "user") {
    state.items.push({ kind: "user", key: key(state, "u"), rev: 0, text: textOf(message.content), images: imageCount(message.content), restorable: true });
  } else if (message.role === "assistant") {
    state.items.push({ kind: "assistant", key: key(state, "a"), rev: 0, blocks: [], indexMap: {}, model: message.model });
  }
}

function endMessage(state: ChatState, message: Message): void {
  if (message.role !== "assistant") return;
  const item = currentAssistant(state);
  if (!item) return;
  item.stopReason = message.stopReason;
  item.errorMessage = message.errorMessage ?? undefined;
  item.rev += 1;
}

function cardApproval(request: ApprovalRequest): CardApproval {
  const preview = request.preview;
  return {
    title: request.title || preview.title,
    command: preview.command,
    patch: preview.patch,
    hasDiff: preview.oldText !== undefined && preview.newText !== undefined,
    suggestedRule: request.suggestedRule,
  };
}

/** What the run does now: waiting for the user beats running a tool (parallel calls) beats streaming. */
function currentActivity(state: ChatState): ChatState["activity"] {
  const cards = Object.values(state.tools);
  const waiting = cards.find((t) => t.approval);
  if (waiting) return { kind: "approval", name: waiting.name };
  const running = cards.find((t) => t.status === "running");
  return running ? { kind: "tool", name: running.name } : { kind: "streaming" };
}

/** Applies one event in place and returns the same state (the webview keeps one instance). */
export function applyEvent(state: ChatState, event: AgentEvent): ChatState {
  switch (event.type) {
    case "agent_start":
      state.running = true;
      state.activity = { kind: "streaming" };
      break;
    case "agent_end":
      state.running = false;
      state.activity = { kind: "idle" };
      for (const card of Object.values(state.cards)) {
        if (card.status === "pending" || card.status === "running" || card.approval) {
          if (card.status !== "done") card.status = card.stopRequested ? "aborted" : "error";
          card.approval = undefined;
          card.rev += 1;
        }
      }
      break;
    case "message_start":
      startMessage(state, event.message);
      break;
    case "message_end":
      endMessage(state, event.message);
      break;
    case "message_update": {
      const item = currentAssistant(state);
      if (item) applyAssistantEvent(state, item, event.assistantMessageEvent);
      break;
    }
    case "tool_execution_start": {
      const card = toolCard(state, event.toolCallId, event.toolName);
      card.status = "running";
      card.args = event.args ?? card.args;
      card.rev += 1;
      if (state.running) state.activity = currentActivity(state);
      break;
    }
    case "tool_execution_update": {
      const card = toolCard(state, event.toolCallId, event.toolName);
      card.output = textOf(event.partialResult.content);
      card.rev += 1;
      break;
    }
    case "tool_execution_end": {
      const card = toolCard(state, event.toolCallId, event.toolName);
      applyResult(card, event.result);
      card.status = event.isError ? (card.stopRequested ? "aborted" : "error") : "done";
      card.durationMs = event.durationMs ?? undefined;
      card.rev += 1;
      card.approval = undefined;
      if (state.running) state.activity = currentActivity(state);
      break;
    }
    case "tool_approval_request": {
      const card = toolCard(state, event.request.toolCallId, event.request.toolName);
      card.approval = cardApproval(event.request);
      card.approvalOutcome = undefined;
      card.rev += 1;
      if (state.running) state.activity = currentActivity(state);
      break;
    }
    case "tool_approval_end": {
      const card = state.tools[event.toolCallId];
      if (card) {
        card.approval = undefined;
        card.approvalOutcome = event.outcome;
        card.rev += 1;
      }
      if (state.running) state.activity = currentActivity(state);
      break;
    }
    case "queue_update":
      state.queue = { steering: [...event.steering], followUp: [...event.followUp] };
      break;
    case "auto_retry_start":
      addNotice(state, "info", `Retrying (${event.attempt}/${event.maxAttempts}) after: ${event.errorMessage}`);
      break;
    default:
      break;
  }
  return state;
}

/** Adds a notice (an error the user must see, e.g. "no model configured"). */
export function addNotice(state: ChatState, level: "info" | "error", text: string,
  extra: { topic?: string; actions?: NoticeAction[] } = {}): ChatState {
  state.nextNoticeKey = (state.nextNoticeKey ?? 0) + 1;
  state.items.push({ kind: "notice", key: `n${state.nextNoticeKey}`, rev: 0, level, text, ...extra });
  return state;
}

/** Adds the user's message as the chat shows it (a prompt the daemon never took, so it stays). */
export function addUserMessage(state: ChatState, text: string, images: number): ChatState {
  state.items.push({ kind: "user", key: key(state, "u"), rev: 0, text, images });
  return state;
}

/** Rebuilds the chat from a stored transcript (`messages`, after `session/load` or a restart). */
export function chatFromMessages(messages: readonly Message[]): ChatState {
  const state = emptyChat();
  for (const message of messages) {
    if (message.role === "user" || message.role === "assistant") {
      startMessage(state, message);
    }
    if (message.role === "assistant") {
      const item = currentAssistant(state);
      if (!item) continue;
      for (const part of message.content) {
        if (part.type === "text") item.blocks.push({ kind: "text", text: part.text });
        else if (part.type === "thinking") item.blocks.push({ kind: "thinking", text: part.thinking });
        else if (part.type === "toolCall") {
          const card = newToolCard(state, part.id, part.name);
          card.args = part.arguments ?? {};
          item.blocks.push({ kind: "toolCall", toolCallId: part.id, cardKey: card.key });
        }
      }
      endMessage(state, message);
    } else if (message.role === "toolResult") {
      const card = toolCard(state, message.toolCallId, message.toolName);
      applyResult(card, { content: message.content, details: message.details });
      card.status = message.isError ? "error" : "done";
    } else if (message.role === "bashExecution") {
      // A command the user ran (in Pi, or through `bash`): shown as the user's turn, as a shell shows it.
      const text = `$ ${message.command}\n${message.output}${message.cancelled ? "\n(cancelled)" : ""}`;
      state.items.push({ kind: "user", key: key(state, "u"), rev: 0, text, images: 0 });
    } else if (message.role === "compactionSummary" || message.role === "branchSummary") {
      // What stands for turns the chat no longer holds: a note saying so, then the model's summary.
      const heading = message.role === "compactionSummary"
        ? `Earlier conversation summarised (${message.tokensBefore.toLocaleString("en-US")} tokens)`
        : "Summary of another branch";
      addNotice(state, "info", heading);
      state.items.push({ kind: "assistant", key: key(state, "a"), rev: 0, blocks: [{ kind: "text", text: message.summary }], indexMap: {} });
    } else if (message.role === "custom" && message.display) {
      // A Pi extension's message that Pi's chat shows: the user's words to the model.
      state.items.push({ kind: "user", key: key(state, "u"), rev: 0, text: textOf(message.content), images: imageCount(message.content) });
    }
  }
  return state;
}

/**
 * Merges runs of text/thinking deltas for the same block into one event, so a burst of thousands
 * of deltas crosses the extension-host → webview bridge as a handful of messages.
 */
export function coalesceEvents(events: readonly AgentEvent[]): AgentEvent[] {
  const out: AgentEvent[] = [];
  for (const event of events) {
    const last = out[out.length - 1];
    if (
      event.type === "message_update" && last?.type === "message_update" &&
      (event.assistantMessageEvent.type === "text_delta" || event.assistantMessageEvent.type === "thinking_delta")
    ) {
      const a = last.assistantMessageEvent;
      const b = event.assistantMessageEvent;
      if (a.type === b.type && a.contentIndex === b.contentIndex) {
        out[out.length - 1] = { ...last, assistantMessageEvent: { ...a, delta: a.delta + b.delta } };
        continue;
      }
    }
    out.push(event);
  }
  return out;
}
