// The messages between the extension host and the chat webview, in both directions.
import type { AgentEvent, ImageInput } from "../protocol";
import type { ChatState } from "./chatModel";

export interface ViewStatus {
  folder: string;
  model: string;
  thinkingLevel: string;
  scripted: boolean;
  tokens: number;
  cost: number;
  /** A problem the user must act on (daemon not found, no model configured), or "". */
  problem: string;
}

export type HostToView =
  | { type: "events"; events: AgentEvent[] }
  /** The whole chat, from the host's copy (view opened, session loaded, daemon restarted). */
  | { type: "restore"; chat: ChatState }
  | { type: "notice"; level: "info" | "error"; text: string }
  | { type: "status"; status: ViewStatus }
  | { type: "mentions"; requestId: number; files: string[] }
  | { type: "addContext"; text: string }
  /** For the in-host tests: read (and optionally click, type into, or press a key in) elements. */
  | { type: "testQuery"; id: number; selector: string; action?: TestAction };

export type TestAction = { click: true } | { type: string } | { key: string };

export type SendMode = "steer" | "followUp";

export type ViewToHost =
  | { type: "ready" }
  | { type: "send"; text: string; images: ImageInput[]; mode?: SendMode }
  | { type: "abort" }
  | { type: "clearQueue" }
  | { type: "openLog"; toolCallId: string }
  | { type: "openDiff"; toolCallId: string }
  | { type: "insertCode"; code: string }
  | { type: "copy"; text: string }
  | { type: "command"; command: string }
  | { type: "mentions"; requestId: number; query: string }
  | { type: "testResult"; id: number; texts: string[] };
