// From the user's settings to the daemon's command line and environment. Pure, so it is unit
// tested; the extension reads the settings and the SecretStorage keys and hands them in.

export interface LaunchSettings {
  command: string;
  args: string[];
  provider: string;
  model: string;
  baseUrl: string;
  thinkingLevel: string;
  tools: string[];
}

/** The providers whose key the daemon reads from the environment, and the variable it reads. */
export const API_KEY_ENV: Record<string, string> = {
  anthropic: "ANTHROPIC_API_KEY",
  openai: "OPENAI_API_KEY",
};

/**
 * The daemon's argv. `trusted` is VS Code's trust of the workspace (`workspace.isTrusted`), passed
 * as Pi's `--approve` / `--no-approve`: the folder's own `.pi/settings.json` may loosen approvals
 * (its allow rules, defaultPolicy, mcpServers) only in a workspace the user trusts here. The user's
 * own `args` come last, so an explicit flag there wins.
 */
export function launchArgs(settings: LaunchSettings, cwd: string, trusted: boolean): string[] {
  const args = ["--cwd", cwd, trusted ? "--approve" : "--no-approve"];
  if (settings.provider) args.push("--provider", settings.provider);
  if (settings.model) args.push("--model", settings.model);
  if (settings.baseUrl) args.push("--base-url", settings.baseUrl);
  if (settings.thinkingLevel) args.push("--thinking", settings.thinkingLevel);
  if (settings.tools.length > 0) args.push("--tools", settings.tools.join(","));
  return [...args, ...settings.args];
}

/** The daemon's environment: the editor's, plus the stored keys (which never reach argv or logs). */
export function launchEnv(base: NodeJS.ProcessEnv, keys: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base };
  for (const [provider, variable] of Object.entries(API_KEY_ENV)) {
    const key = keys[provider];
    if (key) env[variable] = key;
  }
  return env;
}
