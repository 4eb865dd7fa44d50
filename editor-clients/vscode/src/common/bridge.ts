// The messages between the extension host and the chat webview, in both directions.
import type { AgentEvent, ApprovalDecision, ContextUsage, ImageInput } from "../protocol";
import type { ChatState } from "./chatModel";
import type { RestoreTarget, RewindPanel } from "./checkpoints";
import type { HostEvent } from "./hostEvents";

export interface ViewStatus {
  folder: string;
  model: string;
  thinkingLevel: string;
  scripted: boolean;
  tokens: number;
  cost: number;
  /** A problem the user must act on (daemon not found, no model configured), or "". */
  problem: string;
  /** The session's approval policy (`ask`, `acceptEdits`, `auto`, `readOnly`), or "" before start. */
  approvalPolicy: string;
  /** How full the model's context window is (`session/stats`), when a model is configured. */
  contextUsage?: ContextUsage;
}

export type HostToView =
  | { type: "events"; events: AgentEvent[] }
  /** The whole chat, from the host's copy (view opened, session loaded, daemon restarted). */
  | { type: "restore"; chat: ChatState }
  /** A change the host made to its copy of the chat (a notice, a Stop, the daemon's death): the
   * view applies it to its copy in the same order as the agent events. */
  | { type: "host"; event: HostEvent }
  | { type: "status"; status: ViewStatus }
  | { type: "mentions"; requestId: number; files: string[] }
  | { type: "addContext"; text: string }
  /** The rewind bar above the composer (`null` hides it). */
  | { type: "rewindPanel"; panel: RewindPanel | null }
  /** Replaces the composer's text (the message a conversation rewind went back before). */
  | { type: "setInput"; text: string }
  /** For the in-host tests: read (and optionally click, type into, or press a key in) elements. */
  | { type: "testQuery"; id: number; selector: string; action?: TestAction };

export type TestAction = { click: true } | { type: string } | { key: string };

export type SendMode = "steer" | "followUp";

export type ViewToHost =
  | { type: "ready" }
  | { type: "send"; text: string; images: ImageInput[]; mode?: SendMode }
  | { type: "abort" }
  | { type: "clearQueue" }
  | { type: "openLog"; cardKey: string }
  | { type: "openDiff"; cardKey: string }
  /** The user's answer to a call waiting for approval (the card's buttons). */
  | { type: "approve"; toolCallId: string; outcome: ApprovalDecision["outcome"]; reason?: string }
  /** Reopen the before/after diff of a call waiting for approval. */
  | { type: "showApproval"; toolCallId: string }
  | { type: "insertCode"; code: string }
  | { type: "copy"; text: string }
  | { type: "command"; command: string }
  | { type: "mentions"; requestId: number; query: string }
  /** The restore button of a user message: list what a rewind to before it would change. */
  | { type: "rewindAsk"; key: string }
  /** Edit-and-resend of a user message: rewind files and conversation to before it, then send `text`. */
  | { type: "resend"; key: string; text: string }
  /** The rewind bar's answers: how to rewind, restore conflicts anyway, leave them, or close. */
  | { type: "rewind"; restore: RestoreTarget }
  | { type: "rewindForce" }
  | { type: "rewindSkip" }
  | { type: "rewindCancel" }
  /** A diff editor of a conflict (`unsaved`: a restored file's editor against the disk). */
  | { type: "rewindDiff"; path: string; unsaved?: boolean }
  | { type: "testResult"; id: number; texts: string[] };
