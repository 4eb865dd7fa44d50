// The VS Code side of `@` mentions: what the picker offers for a query (files, folders, workspace
// symbols, problems, the terminal's output, the selection, the active editor) and, on send, the
// context each becomes in the prompt. Open documents are read from their editor, unsaved text
// included, as the daemon's own reads are.
import * as vscode from "vscode";
import {
  capText, contextBlock, formatProblems, type Lines, type Mention, numberLines, type Problem, withContext,
} from "../common/mentions";
import type { TerminalOutput } from "./terminalOutput";

/** How many rows the picker shows at most. */
const MAX_ROWS = 30;
const EXCLUDE = "**/{node_modules,.git,.venv,__pycache__,out,dist}/**";

const relative = (uri: vscode.Uri): string => vscode.workspace.asRelativePath(uri, false);

/** The editor the user was last in (the chat view takes the focus, not the editor). */
function lastEditor(): vscode.TextEditor | undefined {
  return vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors.find((e) => e.document.uri.scheme === "file");
}

/** The entries that are not files: offered when their name starts with the query. */
function specials(terminal: TerminalOutput): Mention[] {
  const editor = lastEditor();
  const rows: Mention[] = [];
  if (editor && editor.document.uri.scheme === "file") {
    const path = relative(editor.document.uri);
    rows.push({ kind: "editor", token: "editor", detail: path, path });
    if (!editor.selection.isEmpty) {
      const { start, end } = editor.selection;
      const last = end.line > start.line && end.character === 0 ? end.line - 1 : end.line;
      const lines = { first: start.line + 1, last: last + 1 };
      rows.push({ kind: "selection", token: "selection", detail: `${path}#L${lines.first}-L${lines.last}`, path, lines });
    }
    const own = vscode.languages.getDiagnostics(editor.document.uri).length;
    rows.push({ kind: "problems", token: `problems:${path}`, detail: `${own} in this file`, path });
  }
  const all = vscode.languages.getDiagnostics().reduce((n, [, list]) => n + list.length, 0);
  rows.push({ kind: "problems", token: "problems", detail: `${all} in the workspace` });
  const name = vscode.window.activeTerminal?.name;
  rows.push({ kind: "terminal", token: "terminal", detail: name ? `${name}: ${terminal.describe()}` : "no terminal open" });
  return rows;
}

/** The picker's rows for what follows the `@`. */
export async function mentionCandidates(folder: vscode.WorkspaceFolder, query: string, terminal: TerminalOutput): Promise<Mention[]> {
  const q = query.toLowerCase();
  const symbolQuery = q.startsWith("symbol:") ? query.slice(7) : query;
  const rows = specials(terminal).filter((m) => m.token.toLowerCase().startsWith(q));
  const glob = q.startsWith("symbol:") ? undefined : `**/*${query.replace(/[[\]{}*?]/g, "")}*`;
  const find = (pattern: string, limit: number) => glob
    ? vscode.workspace.findFiles(new vscode.RelativePattern(folder, pattern), EXCLUDE, limit) : Promise.resolve([]);
  const [files, inFolders, symbols] = await Promise.all([
    find(q ? glob ?? "" : "**/*", MAX_ROWS),
    // Files under a folder whose name matches, for the folder rows.
    find(q ? `**/*${query.replace(/[[\]{}*?/]/g, "")}*/**` : "**/*", 100),
    symbolQuery.length >= 2 ? workspaceSymbols(folder, symbolQuery) : Promise.resolve([]),
  ]);
  const paths = files.map(relative).sort();
  const folders = [...new Set([...paths, ...inFolders.map(relative)].flatMap((p) => ancestors(p)))]
    .filter((d) => (d.split("/").pop() ?? "").toLowerCase().includes(q.replace(/\/$/, ""))).sort();
  // Files leave room for the folders and symbols below them.
  rows.push(...paths.slice(0, MAX_ROWS - 10).map((path): Mention => ({ kind: "file", token: path, path })));
  rows.push(...folders.map((path): Mention => ({ kind: "folder", token: `${path}/`, path })));
  rows.push(...symbols);
  return rows.slice(0, MAX_ROWS);
}

/** `a/b/c.py` → `a`, `a/b`. */
function ancestors(path: string): string[] {
  const parts = path.split("/").slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}

async function workspaceSymbols(folder: vscode.WorkspaceFolder, query: string): Promise<Mention[]> {
  const found = (await vscode.commands.executeCommand<vscode.SymbolInformation[] | undefined>(
    "vscode.executeWorkspaceSymbolProvider", query)) ?? [];
  return found
    .filter((s) => vscode.workspace.getWorkspaceFolder(s.location.uri)?.uri.toString() === folder.uri.toString())
    .slice(0, 10)
    .map((s): Mention => {
      const path = relative(s.location.uri);
      const lines = { first: s.location.range.start.line + 1, last: s.location.range.end.line + 1 };
      // A token is one word: Markdown's headings (`# Title`) and the like lose their marks and spaces.
      const word = s.name.replace(/^[#\s]+/, "").replace(/\s+/g, "_");
      return { kind: "symbol", token: `symbol:${word}`, name: s.name, detail: `${vscode.SymbolKind[s.kind].toLowerCase()} · ${path}:${lines.first}`, path, lines };
    });
}

/** A workspace file's text: its editor's (unsaved changes included) when open, else the disk's. */
async function fileText(folder: vscode.WorkspaceFolder, path: string): Promise<string> {
  const uri = vscode.Uri.joinPath(folder.uri, path);
  const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (open) return open.getText();
  return new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
}

function excerpt(text: string, lines?: Lines): string {
  if (!lines) return numberLines(capText(text));
  const all = text.split("\n").slice(lines.first - 1, lines.last);
  return numberLines(capText(all.join("\n")), lines.first);
}

function problemsOf(folder: vscode.WorkspaceFolder, path?: string): Problem[] {
  const severities = ["error", "warning", "info", "hint"] as const;
  const entries: [vscode.Uri, vscode.Diagnostic[]][] = path
    ? [[vscode.Uri.joinPath(folder.uri, path), vscode.languages.getDiagnostics(vscode.Uri.joinPath(folder.uri, path))]]
    : vscode.languages.getDiagnostics();
  return entries.flatMap(([uri, list]) => list.map((d): Problem => ({
    path: relative(uri), line: d.range.start.line + 1, severity: severities[d.severity], message: d.message,
    source: d.source,
  })));
}

/** The context block one mention puts in the prompt. */
async function expand(folder: vscode.WorkspaceFolder, mention: Mention, terminal: TerminalOutput): Promise<string> {
  const path = mention.path ?? "";
  switch (mention.kind) {
    case "file":
    case "editor":
      return contextBlock(path, excerpt(await fileText(folder, path)));
    case "selection":
    case "symbol": {
      const range = mention.lines ? `#L${mention.lines.first}-L${mention.lines.last}` : "";
      const what = mention.kind === "symbol" ? `${mention.name ?? mention.token.slice(7)} (${mention.detail ?? ""})\n` : "";
      return contextBlock(`${path}${range}`, what + excerpt(await fileText(folder, path), mention.lines));
    }
    case "folder": {
      const files = await vscode.workspace.findFiles(new vscode.RelativePattern(vscode.Uri.joinPath(folder.uri, path), "**/*"), EXCLUDE, 500);
      return contextBlock(`${path}/`, capText(files.map(relative).sort().join("\n") || "(empty)"));
    }
    case "problems":
      return contextBlock(path ? `problems:${path}` : "problems", formatProblems(problemsOf(folder, mention.path)));
    case "terminal":
      return contextBlock("terminal", capText(terminal.recent()));
  }
}

/** The prompt the daemon receives: the message, then the context of each mention it still names. */
export async function expandPrompt(folder: vscode.WorkspaceFolder, text: string, chosen: readonly Mention[], terminal: TerminalOutput): Promise<string> {
  const blocks: string[] = [];
  for (const mention of chosen) {
    try {
      blocks.push(await expand(folder, mention, terminal));
    } catch (error) {
      blocks.push(contextBlock(mention.path ?? mention.token, `(could not be read: ${error instanceof Error ? error.message : String(error)})`));
    }
  }
  return withContext(text, blocks);
}
