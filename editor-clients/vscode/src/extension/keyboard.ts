// The chat's keyboard commands: focus the input, send, accept or reject the call that waits, move
// through the tool cards. Stop is `pi.abort`. The view does the view's part (bridge messages); the
// bindings and their `when` clauses are in package.json.
import type { ApprovalPrompts } from "./approvalPrompts";
import type { ChatViewProvider } from "./chatView";
import type { FolderSession } from "./folderSession";

/** Each command's id and what it does (the caller registers them, reporting their errors). */
export function keyboardCommands(chatView: ChatViewProvider, prompts: ApprovalPrompts, session: () => FolderSession): [string, () => Promise<void>][] {
  const inView = (message: Parameters<ChatViewProvider["post"]>[0]) => async (): Promise<void> => {
    session();
    chatView.reveal();
    await chatView.whenReady();
    chatView.post(message);
  };
  /** The call waiting longest: the one whose card is first in the chat. */
  const decideFirst = (outcome: "allow" | "reject") => async (): Promise<void> => {
    const waiting = session().approvals.pending[0];
    if (!waiting) throw new Error("No tool call is waiting for approval.");
    await prompts.decide(waiting.toolCallId, outcome, undefined, outcome === "reject");
  };
  return [
    ["pi.focusChat", inView({ type: "focusInput" })],
    ["pi.send", inView({ type: "sendInput" })],
    ["pi.nextCard", inView({ type: "moveCard", delta: 1 })],
    ["pi.previousCard", inView({ type: "moveCard", delta: -1 })],
    ["pi.accept", decideFirst("allow")],
    ["pi.reject", decideFirst("reject")],
  ];
}
