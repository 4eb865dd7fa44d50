// Checkpoints as the chat shows them: which restore point a user message of the chat is, which
// files a rewind to it would put back, the bar that asks how to rewind and shows what it left
// alone, and the context window's share in use. Pure, so the unit tests check it without a host.
import type { CheckpointInfo, ContextUsage, RewindConflict } from "../protocol";
import type { ChatState, UserItem } from "./chatModel";
import { reversePatch } from "./patch";

export type RestoreTarget = "files" | "conversation" | "both";

/** A file a rewind would put back, and what putting it back does to it. */
export interface RestoreFile {
  path: string;
  /** The path as the chat shows it: relative to the workspace when inside it. */
  label: string;
  /** What the first run that touched it did (`created` files are removed by the rewind). */
  change: CheckpointInfo["files"][number]["change"];
}

/** The bar above the composer while a rewind is being decided or has left files alone. */
export interface RewindPanel {
  /** `choose`: files listed, files/conversation/both offered; `conflicts`: some files were left alone. */
  stage: "choose" | "conflicts";
  /** The user message rewound to (what the conversation goes back to before). */
  messageText: string;
  /** Set for edit-and-resend: the text sent once the rewind is done. */
  resendText?: string;
  restore: RestoreTarget;
  files: RestoreFile[];
  notCaptured: string[];
  conflicts: { path: string; label: string }[];
  /** Restored files whose editors hold unsaved changes the restore did not reach (kept, not overwritten). */
  unsavedKept: { path: string; label: string }[];
}

/** The chat's user messages that are restore points (not shell commands or extension messages). */
function restorableItems(chat: ChatState): UserItem[] {
  return chat.items.filter((i): i is UserItem => i.kind === "user" && i.restorable === true);
}

/**
 * The checkpoint of the chat's user message `key`. Both lists end at the branch's newest message
 * (a compacted chat holds only its newest ones), so they are matched from the end; a text that
 * does not match means the chat is stale and no checkpoint is guessed.
 */
export function checkpointOf(chat: ChatState, key: string, checkpoints: readonly CheckpointInfo[]): number | undefined {
  const items = restorableItems(chat);
  const position = items.findIndex((i) => i.key === key);
  if (position < 0) return undefined;
  const fromEnd = items.length - 1 - position;
  const checkpoint = checkpoints[fromEnd];
  if (!checkpoint || checkpoint.text.trim() !== items[position].text.trim()) return undefined;
  return fromEnd;
}

export function relativeLabel(path: string, workspace: string): string {
  const root = workspace.endsWith("/") ? workspace : `${workspace}/`;
  return path.startsWith(root) ? path.slice(root.length) : path;
}

/**
 * The files a rewind to `checkpoints[index]` puts back: those changed by its run and every later
 * one (the list is the most recent first), each with what the earliest of those runs did to it.
 */
export function filesToRestore(checkpoints: readonly CheckpointInfo[], index: number, workspace: string): RestoreFile[] {
  const files = new Map<string, RestoreFile>();
  for (let i = index; i >= 0; i--) {
    for (const file of checkpoints[i].files) {
      if (!files.has(file.path)) files.set(file.path, { path: file.path, label: relativeLabel(file.path, workspace), change: file.change });
    }
  }
  return [...files.values()].sort((a, b) => a.label.localeCompare(b.label));
}

/** What the rewind does to a file, in the bar's words. */
export function restoreVerb(change: RestoreFile["change"]): string {
  return change === "created" ? "remove" : change === "deleted" ? "bring back" : "restore";
}

/** Undoes the direction of a unified diff, so `reversePatch` applies it forwards. */
function invertPatch(diff: string): string {
  return diff.split("\n").map((line) => {
    const header = /^@@ -(\d+(?:,\d+)?) \+(\d+(?:,\d+)?) @@(.*)$/.exec(line);
    if (header) return `@@ -${header[2]} +${header[1]} @@${header[3]}`;
    if (line.startsWith("---") || line.startsWith("+++")) return line;
    if (line.startsWith("+")) return `-${line.slice(1)}`;
    if (line.startsWith("-")) return `+${line.slice(1)}`;
    return line;
  }).join("\n");
}

/**
 * What a conflict's file would be after the rewind: its diff (`---` the file now, `+++` the
 * checkpoint) applied to the text it holds now. `undefined` for a binary file or a file the
 * rewind removes (the diff editor then shows it against nothing).
 */
export function restoredText(now: string, conflict: RewindConflict): string | undefined {
  if (conflict.diff.startsWith("Binary files ")) return undefined;
  if (/^\+\+\+ \/dev\/null$/m.test(conflict.diff)) return "";
  return reversePatch(now, invertPatch(conflict.diff));
}

/** The context window's share in use, for the chat's header (`undefined` while unknown). */
export function contextLabel(usage: ContextUsage | undefined): { text: string; title: string; percent: number } | undefined {
  if (!usage || usage.contextWindow <= 0) return undefined;
  const window = compactNumber(usage.contextWindow);
  if (usage.tokens === null || usage.percent === null) {
    return { text: `context ?/${window}`, title: "Context in use: unknown until the next reply (the conversation was just compacted)", percent: 0 };
  }
  const percent = Math.round(usage.percent);
  return {
    text: `context ${percent}%`,
    title: `Context in use: ${usage.tokens.toLocaleString("en-US")} of ${usage.contextWindow.toLocaleString("en-US")} tokens (${window} window)`,
    percent,
  };
}

function compactNumber(n: number): string {
  if (n >= 1_000_000) return `${Number((n / 1_000_000).toFixed(1))}M`;
  if (n >= 1000) return `${Math.round(n / 1000)}k`;
  return String(n);
}
