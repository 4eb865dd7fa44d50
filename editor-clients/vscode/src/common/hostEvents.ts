// What the extension host adds to the chat besides the daemon's agent events: notices, a prompt the
// daemon never took, the user's Stop, the daemon's death. The host applies each one to its own copy
// of the chat and sends it to the webview, which applies it to its copy: both sides run this one
// reducer in the same order as the agent events, so their card keys stay the same.
import { addNotice, addUserMessage, type ChatState, type NoticeAction } from "./chatModel";

export type HostEvent =
  | { type: "notice"; level: "info" | "error"; text: string; topic?: string; actions?: NoticeAction[] }
  /** Removes the notices of a topic that no longer holds (the daemon runs again). */
  | { type: "dismiss"; topic: string }
  /** A prompt that failed before the daemon echoed it: the user's words stay in the chat. */
  | { type: "prompt_failed"; text: string; images: number }
  /** The user pressed Stop: the calls still unfinished end as aborted, not failed. */
  | { type: "stop_requested" }
  /** The daemon died: the run is over, and what was unfinished was interrupted. */
  | { type: "daemon_exit" };

/** The topic of the notices about the daemon's process (not found, died): gone once it runs. */
export const DAEMON_TOPIC = "daemon";

export function applyHostEvent(state: ChatState, event: HostEvent): ChatState {
  switch (event.type) {
    case "notice":
      return addNotice(state, event.level, event.text, { topic: event.topic, actions: event.actions });
    case "dismiss":
      state.items = state.items.filter((item) => item.kind !== "notice" || item.topic !== event.topic);
      return state;
    case "prompt_failed":
      return addUserMessage(state, event.text, event.images);
    case "stop_requested":
      for (const card of Object.values(state.tools)) {
        if (card.status !== "pending" && card.status !== "running") continue;
        card.stopRequested = true;
        card.rev += 1;
      }
      return state;
    case "daemon_exit":
      state.running = false;
      state.activity = { kind: "idle" };
      state.queue = { steering: [], followUp: [] };
      for (const card of Object.values(state.cards)) {
        if (card.status !== "pending" && card.status !== "running" && !card.approval) continue;
        card.status = "interrupted";
        card.approval = undefined;
        card.rev += 1;
      }
      return state;
  }
}
