// The Pi commands that pick from lists: sessions, tools, models, thinking level, approval policy,
// API keys.
import * as vscode from "vscode";
import { API_KEY_ENV } from "../client/launch";
import { APPROVAL_POLICIES, type ApprovalPolicy } from "../protocol";
import type { FolderSession } from "./folderSession";
import { SECRET_PREFIX } from "./settings";

export async function pickSession(session: FolderSession): Promise<void> {
  const client = await session.client();
  const { sessions } = await client.request("session/list");
  const pick = await vscode.window.showQuickPick(
    [
      { label: "$(add) New Session", sessionId: "" },
      ...sessions.map((s) => ({
        // A named session (Pi's /name) shows its name, and its first message beside it.
        label: s.name || s.firstMessage || "(empty)",
        description: s.name ? `${s.messageCount} messages · ${s.firstMessage}` : `${s.messageCount} messages`,
        detail: new Date(s.modified).toLocaleString(),
        sessionId: s.sessionId,
      })),
    ],
    { title: `Pi sessions in ${session.folder.name}`, matchOnDescription: true },
  );
  if (!pick) return;
  if (pick.sessionId) await session.loadSession(pick.sessionId);
  else await session.newSession();
}

/** Names the current session (kept in its file): `Pi: Sessions` lists it by that name. The name
 * comes from the command's argument (a keybinding's `args`) or an input box. */
export async function nameSession(session: FolderSession, name?: string): Promise<void> {
  const client = await session.client();
  const value = typeof name === "string" ? name : await vscode.window.showInputBox({
    title: "Name this Pi session",
    prompt: "Pi: Sessions lists the session by this name",
    value: (await client.request("state")).sessionName ?? "",
    validateInput: (text) => (text.trim() ? undefined : "A name cannot be empty."),
  });
  if (value === undefined) return;
  const named = await client.request("session/setName", { name: value });
  void vscode.window.showInformationMessage(`Pi session named “${named.name}”`);
}

export async function pickTools(session: FolderSession): Promise<void> {
  const client = await session.client();
  const { tools } = await client.request("tools/list");
  const items = tools.map((t) => ({ label: t.name, description: t.description.split(". ")[0], picked: t.active }));
  const picked = await vscode.window.showQuickPick(items, { canPickMany: true, title: "Active Pi tools" });
  if (!picked) return;
  const { active } = await client.request("tools/setActive", { names: picked.map((p) => p.label) });
  void vscode.window.showInformationMessage(`Pi tools: ${active.join(", ") || "none"}`);
}

export async function pickModel(session: FolderSession): Promise<void> {
  const client = await session.client();
  const { models } = await client.request("models/list");
  const current = session.info?.model;
  const pick = await vscode.window.showQuickPick(
    models.map((m) => ({
      label: m.name || m.id,
      description: `${m.provider}/${m.id}`,
      detail: current && current.id === m.id && current.provider === m.provider ? "current" : undefined,
      model: m,
    })),
    { title: "Pi model" },
  );
  if (!pick) return;
  const model = await client.request("model/set", { provider: pick.model.provider, modelId: pick.model.id });
  if (session.info) session.info = { ...session.info, model };
  session.problem = "";
  await session.refresh();
}

export async function pickThinking(session: FolderSession): Promise<void> {
  const levels = ["off", "minimal", "low", "medium", "high", "xhigh"] as const;
  const pick = await vscode.window.showQuickPick([...levels], { title: "Pi thinking level" });
  if (!pick) return;
  const client = await session.client();
  const result = await client.request("thinking/set", { level: pick as (typeof levels)[number] });
  session.thinkingLevel = result.level;
  if (result.level !== pick) {
    void vscode.window.showInformationMessage(`This model supports thinking levels: ${result.available.join(", ")}; set to ${result.level}.`);
  }
  await session.refresh();
}

const POLICY_DESCRIPTIONS: Record<ApprovalPolicy, string> = {
  ask: "ask before bash, edits, writes and reads outside the workspace",
  acceptEdits: "edits and writes in the workspace run; bash and anything outside asks",
  auto: "everything runs without asking (Pi's behaviour)",
  readOnly: "nothing is changed: bash, edits and writes are refused (for planning)",
};

/** Sets the session's policy at once and keeps it in `pi.approvalPolicy` for the next daemon. */
export async function pickApprovalPolicy(session: FolderSession): Promise<void> {
  const current = session.approvalPolicy;
  const pick = await vscode.window.showQuickPick(
    APPROVAL_POLICIES.map((policy) => ({ label: policy, description: policy === current ? "current" : undefined,
      detail: POLICY_DESCRIPTIONS[policy], policy })),
    { title: "Pi approval policy" },
  );
  if (!pick) return;
  await session.setApprovalPolicy(pick.policy);
  const target = vscode.workspace.workspaceFolders ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration("pi", session.folder.uri).update("approvalPolicy", pick.policy, target);
}

/** Stores a key in SecretStorage; returns true when one was stored (the daemons must restart). */
export async function setApiKey(secrets: vscode.SecretStorage): Promise<boolean> {
  const provider = await vscode.window.showQuickPick(Object.keys(API_KEY_ENV), { title: "Provider of the API key" });
  if (!provider) return false;
  const key = await vscode.window.showInputBox({
    title: `${provider} API key`, password: true, ignoreFocusOut: true,
    prompt: "Kept in VS Code's secret storage and handed to the daemon in its environment.",
  });
  if (key === undefined) return false;
  if (key) await secrets.store(SECRET_PREFIX + provider, key);
  else await secrets.delete(SECRET_PREFIX + provider);
  return true;
}
