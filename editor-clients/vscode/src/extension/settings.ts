// The extension's settings and the API keys kept in SecretStorage (never in settings or logs).
import * as vscode from "vscode";
import { API_KEY_ENV, type LaunchSettings } from "../client/launch";
import type { ApprovalPolicy } from "../protocol";

export interface Settings {
  launch: LaunchSettings;
  followUpMode: "ask" | "steer" | "followUp";
  /** Sent in `initialize`; undefined leaves it to the daemon (`ask`, or the user's Pi settings). */
  approvalPolicy?: ApprovalPolicy;
  apiKeys: Record<string, string | undefined>;
}

export const SECRET_PREFIX = "pi.apiKey.";

export async function readSettings(secrets: vscode.SecretStorage, scope?: vscode.Uri): Promise<Settings> {
  const config = vscode.workspace.getConfiguration("pi", scope);
  const apiKeys: Record<string, string | undefined> = {};
  for (const provider of Object.keys(API_KEY_ENV)) apiKeys[provider] = await secrets.get(SECRET_PREFIX + provider);
  return {
    launch: {
      command: config.get<string>("daemon.command") || "pi-rpc",
      args: config.get<string[]>("daemon.args") ?? [],
      provider: config.get<string>("provider") ?? "",
      model: config.get<string>("model") ?? "",
      baseUrl: config.get<string>("baseUrl") ?? "",
      thinkingLevel: config.get<string>("thinkingLevel") ?? "",
      tools: config.get<string[]>("tools") ?? [],
    },
    followUpMode: config.get<"ask" | "steer" | "followUp">("followUpMode") ?? "ask",
    approvalPolicy: config.get<ApprovalPolicy | "">("approvalPolicy") || undefined,
    apiKeys,
  };
}
