// One tool call as a card: name and what it acts on, live status, output tail, Pi's truncation
// notice with the full log one click away, and a diff button for edit/write.
import type { ToolCard } from "../common/chatModel";

/** Lines of output shown while a tool runs (the live tail). */
const LIVE_TAIL_LINES = 12;
/** A finished result longer than this many lines starts collapsed. */
const COLLAPSE_AFTER_LINES = 8;

/** Codicon names per tool. */
const ICONS: Record<string, string> = {
  read: "file", write: "new-file", edit: "edit", bash: "terminal", grep: "search", find: "search", ls: "folder", powershell: "terminal",
};

export function toolSummary(card: ToolCard): string {
  const a = card.args;
  const str = (v: unknown): string => (typeof v === "string" ? v : "");
  switch (card.name) {
    case "bash":
    case "powershell":
      return str(a.command);
    case "grep":
      return `${str(a.pattern)}${a.path ? `  in ${str(a.path)}` : ""}`;
    case "find":
      return `${str(a.pattern)}${a.path ? `  in ${str(a.path)}` : ""}`;
    default: {
      const path = str(a.path);
      // The line as the model wrote it (a number, or a numeric string the daemon coerces); never an
      // object's "[object Object]".
      const offset = typeof a.offset === "number" || typeof a.offset === "string" ? a.offset : undefined;
      if (path) return offset ? `${path}:${offset}` : path;
      const json = JSON.stringify(a);
      return json === "{}" ? "" : json;
    }
  }
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function statusLabel(card: ToolCard): string {
  if (card.approval) return "waiting for approval";
  switch (card.status) {
    case "pending": return "preparing";
    case "running": return "running";
    case "error": return "failed";
    case "aborted": return "aborted";
    case "interrupted": return "interrupted";
    default: return card.durationMs !== undefined ? `${(card.durationMs / 1000).toFixed(card.durationMs < 1000 ? 2 : 1)}s` : "done";
  }
}

/**
 * The result's text and Pi's truncation notice at its end, shown apart. Only a result whose
 * details say it was truncated has one (the log's path comes from `details.fullOutputPath`): a
 * command that merely prints such a line keeps it in its output.
 */
export function splitNotice(card: Pick<ToolCard, "output" | "truncation" | "fullOutputPath">): { body: string; notice: string } {
  const output = card.output;
  if (!card.truncation && !card.fullOutputPath) return { body: output, notice: "" };
  const match = /\n*(\[(?:Showing|Truncated)[^\]]*\])\s*$/.exec(output);
  if (!match) return { body: output, notice: "" };
  return { body: output.slice(0, match.index), notice: match[1] };
}

/** Colours a unified diff line by line (textContent only: the patch is untrusted text). */
function renderPatch(patch: string): HTMLElement {
  const pre = el("pre", "tool-output approval-patch");
  for (const line of patch.split("\n")) {
    if (line.startsWith("---") || line.startsWith("+++")) continue;
    const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : undefined;
    pre.append(el("span", cls ? `line ${cls}` : "line", `${line}\n`));
  }
  return pre;
}

/**
 * The question and its answers: what the call will do (the command, or the diff with a button
 * for VS Code's diff editor), Allow / Allow Always (naming the rule it adds) / Reject with an
 * optional reason that reaches the model.
 */
function renderApproval(card: ToolCard): HTMLElement {
  const approval = card.approval!;
  const box = el("div", "approval");
  box.append(el("div", "approval-title", approval.title));
  if (approval.command !== undefined) box.append(el("pre", "tool-output approval-command", approval.command));
  else if (approval.patch) box.append(renderPatch(approval.patch));
  const reason = el("input", "approval-reason");
  reason.type = "text";
  reason.placeholder = "Reason for rejecting (optional, sent to Pi)";
  const buttons = el("div", "approval-buttons");
  const allow = el("button", "approve-allow primary", "Allow");
  allow.dataset.action = "approve";
  allow.dataset.outcome = "allow";
  const always = el("button", "approve-always", "Allow Always");
  always.dataset.action = "approve";
  always.dataset.outcome = "allowAlways";
  always.title = `Allow now, and stop asking for ${approval.suggestedRule} in this folder (kept in your Pi rules)`;
  const reject = el("button", "approve-reject", "Reject");
  reject.dataset.action = "approve";
  reject.dataset.outcome = "reject";
  buttons.append(allow, always, reject);
  if (approval.hasDiff) {
    const diff = el("button", "link show-approval", "Open diff");
    diff.dataset.action = "showApproval";
    buttons.append(diff);
  }
  box.append(reason, buttons);
  return box;
}

export function renderToolCard(card: ToolCard): HTMLElement {
  const root = el("div", `tool tool-${card.approval ? "approval" : card.status}`);
  root.dataset.toolCallId = card.toolCallId;
  root.dataset.cardKey = card.key;
  root.dataset.tool = card.name;

  const head = el("div", "tool-head");
  head.append(el("span", `tool-icon codicon codicon-${ICONS[card.name] ?? "tools"}`), el("span", "tool-name", card.name),
    el("span", "tool-summary", toolSummary(card)),
    el("span", `tool-status status-${card.approval ? "approval" : card.status}`, statusLabel(card)));
  root.append(head);
  if (card.approval) {
    root.append(renderApproval(card));
    return root;
  }

  const { body, notice } = splitNotice(card);
  const lines = body ? body.split("\n") : [];
  if (card.status === "running" || card.status === "pending") {
    if (lines.length > 0) root.append(el("pre", "tool-output live", lines.slice(-LIVE_TAIL_LINES).join("\n")));
  } else if (lines.length > 0) {
    const details = el("details", "tool-result");
    details.open = card.status === "error" || lines.length <= COLLAPSE_AFTER_LINES;
    details.append(el("summary", undefined, `${card.status === "error" ? "Error" : "Result"} · ${lines.length} line${lines.length === 1 ? "" : "s"}`),
      el("pre", "tool-output", body));
    root.append(details);
  }

  const actions = el("div", "tool-actions");
  if (notice || card.truncation) {
    const note = el("div", "tool-notice");
    note.append(el("span", undefined, notice || `Output truncated (${card.truncation?.outputLines ?? "?"} of ${card.truncation?.totalLines ?? "?"} lines)`));
    if (card.fullOutputPath || typeof card.args.path === "string") {
      const open = el("button", "link open-log", card.fullOutputPath ? "Open full log" : "Open file");
      open.dataset.action = "openLog";
      note.append(open);
    }
    root.append(note);
  }
  if ((card.name === "edit" || card.name === "write") && card.status === "done") {
    const diff = el("button", "link open-diff", "Open diff");
    diff.dataset.action = "openDiff";
    actions.append(diff);
  }
  if (actions.childElementCount > 0) root.append(actions);
  return root;
}
