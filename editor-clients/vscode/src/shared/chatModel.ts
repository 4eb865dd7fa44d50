// The chat as the user sees it, built from agent events by one pure reducer. The webview renders
// it; the unit tests replay transcripts through it. Each item carries a revision so the renderer
// redraws only what changed since its last frame.
import type { AgentEvent, AssistantMessageEvent, Message } from "../protocol";

export type Block =
  | { kind: "text"; text: string }
  | { kind: "thinking"; text: string }
  | { kind: "toolCall"; toolCallId: string };

export type ToolStatus = "pending" | "running" | "done" | "error";

export interface Truncation {
  truncated: boolean;
  truncatedBy?: string;
  totalLines?: number;
  outputLines?: number;
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
}

export interface UserItem { kind: "user"; key: string; rev: number; text: string; images: number }
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
export interface NoticeItem { kind: "notice"; key: string; rev: number; level: "info" | "error"; text: string }
export type ChatItem = UserItem | AssistantItem | ToolCard | NoticeItem;

export interface ChatState {
  items: ChatItem[];
  tools: Record<string, ToolCard>;
  running: boolean;
  /** What the run is doing now, for the status bar: idle, streaming, or a tool's name. */
  activity: { kind: "idle" } | { kind: "streaming" } | { kind: "tool"; name: string };
  queue: { steering: string[]; followUp: string[] };
  nextKey: number;
}

export function emptyChat(): ChatState {
  return { items: [], tools: {}, running: false, activity: { kind: "idle" }, queue: { steering: [], followUp: [] }, nextKey: 0 };
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

function toolCard(state: ChatState, toolCallId: string, name: string): ToolCard {
  let card = state.tools[toolCallId];
  if (!card) {
    card = { kind: "tool", key: `tool:${toolCallId}`, rev: 0, toolCallId, name, args: {}, status: "pending", output: "" };
    state.tools[toolCallId] = card;
  }
  return card;
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
      item.indexMap[event.contentIndex] = item.blocks.push({ kind: "toolCall", toolCallId: event.id }) - 1;
      toolCard(state, event.id, event.name);
      return;
    }
    case "toolcall_delta": {
      const block = item.blocks[item.indexMap[event.contentIndex]];
      if (block?.kind === "toolCall" && event.arguments && typeof event.arguments === "object") {
        const card = toolCard(state, block.toolCallId, "");
        card.args = event.arguments as Record<string, unknown>;
        card.rev += 1;
      }
      return;
    }
    case "toolcall_end": {
      const card = toolCard(state, event.toolCall.id, event.toolCall.name);
      card.args = (event.toolCall.arguments ?? {}) as Record<string, unknown>;
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
    state.items.push({ kind: "user", key: key(state, "u"), rev: 0, text: textOf(message.content), images: imageCount(message.content) });
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
      for (const card of Object.values(state.tools)) {
        if (card.status === "pending" || card.status === "running") {
          card.status = "error";
          card.rev += 1;
        }
      }
      break;
    case "message_start":
      startMessage(state, event.message as Message);
      break;
    case "message_end":
      endMessage(state, event.message as Message);
      break;
    case "message_update": {
      const item = currentAssistant(state);
      if (item) applyAssistantEvent(state, item, event.assistantMessageEvent);
      break;
    }
    case "tool_execution_start": {
      const card = toolCard(state, event.toolCallId, event.toolName);
      card.status = "running";
      card.args = (event.args ?? card.args) as Record<string, unknown>;
      card.rev += 1;
      if (state.running) state.activity = { kind: "tool", name: event.toolName };
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
      card.status = event.isError ? "error" : "done";
      card.durationMs = event.durationMs ?? undefined;
      card.rev += 1;
      if (state.running) {
        // Parallel tools: the status names one still running, if any.
        const other = Object.values(state.tools).find((t) => t.status === "running");
        state.activity = other ? { kind: "tool", name: other.name } : { kind: "streaming" };
      }
      break;
    }
    case "queue_update":
      state.queue = { steering: [...event.steering], followUp: [...event.followUp] };
      break;
    case "auto_retry_start":
      state.items.push({ kind: "notice", key: key(state, "n"), rev: 0, level: "info",
        text: `Retrying (${event.attempt}/${event.maxAttempts}) after: ${event.errorMessage}` });
      break;
    default:
      break;
  }
  return state;
}

/** Adds a notice (an error the user must see, e.g. "no model configured"). */
export function addNotice(state: ChatState, level: "info" | "error", text: string): ChatState {
  state.items.push({ kind: "notice", key: key(state, "n"), rev: 0, level, text });
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
          item.blocks.push({ kind: "toolCall", toolCallId: part.id });
          toolCard(state, part.id, part.name).args = (part.arguments ?? {}) as Record<string, unknown>;
        }
      }
      endMessage(state, message);
    } else if (message.role === "toolResult") {
      const card = toolCard(state, message.toolCallId, message.toolName);
      applyResult(card, { content: message.content, details: message.details });
      card.status = message.isError ? "error" : "done";
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
