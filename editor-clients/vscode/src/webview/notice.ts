// A notice in the chat: its text and the buttons that act on it (each runs a VS Code command).
import type { NoticeAction, NoticeItem } from "../common/chatModel";

/** The buttons of a notice or an error: a click on `[data-command]` runs that command. */
export function actionButtons(actions: readonly NoticeAction[]): HTMLElement {
  const row = document.createElement("div");
  row.className = "notice-actions";
  for (const action of actions) {
    const button = document.createElement("button");
    button.className = "link notice-action";
    button.textContent = action.label;
    button.dataset.command = action.command;
    row.append(button);
  }
  return row;
}

export function renderNotice(item: NoticeItem): HTMLElement {
  const node = document.createElement("div");
  node.className = `notice ${item.level}`;
  const text = document.createElement("span");
  text.className = "notice-text";
  text.textContent = item.text;
  node.append(text);
  if (item.actions?.length) node.append(actionButtons(item.actions));
  return node;
}
