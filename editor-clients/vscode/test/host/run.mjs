// Runs the extension in a real VS Code host: code-server (VS Code 1.100.3, Node extension host)
// driven by Debian's Chromium through playwright-core, against the real pi-rpc daemon on a scripted
// model. The extension comes from the built .vsix, installed the way a user installs it.
//   phase 1: the in-host suite (test/host/suite.ts) runs inside the extension host;
//   phase 2: UI end to end: keys, chat, screenshot, tools and model pickers, reload leaves no daemon.
// Usage: node test/host/run.mjs   (after scripts/setup-host.sh and the build; `make test` does all)
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const EXT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const REPO = resolve(EXT, "..", "..");
const HOST = process.env.PI_VSCODE_HOST ?? join(EXT, ".vscode-test-host");
const CODE_SERVER = join(HOST, "node_modules", "code-server", "out", "node", "entry.js");
const OUT = join(EXT, "out", "host");
const VSIX = join(EXT, "out", "pi-vscode.vsix");
const PI_RPC = process.env.PI_RPC ?? join(REPO, ".venv", "bin", "pi-rpc");
// The bench (bench/vscode_render.mjs) reuses this harness with its own suite and script.
const SUITE = process.env.PI_VSCODE_SUITE ?? join(EXT, "out", "test", "host", "suite.js");
const SCRIPT = process.env.PI_VSCODE_SCRIPT ?? join(EXT, "test", "host", "script.json");
const { chromium } = createRequire(join(HOST, "package.json"))("playwright-core");

const log = (...args) => console.log("[host]", ...args);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function prepare() {
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const tmp = mkdtempSync(join(tmpdir(), "pi-vscode-host-"));
  const dirs = { tmp, udd: join(tmp, "udd"), exts: join(tmp, "exts"), sessions: join(tmp, "sessions"),
    ws1: join(tmp, "ws-suite"), ws2: join(tmp, "ws-ui") };
  for (const ws of [dirs.ws1, dirs.ws2]) cpSync(join(EXT, "test", "host", "workspace"), ws, { recursive: true });
  mkdirSync(join(dirs.udd, "User"), { recursive: true });
  writeFileSync(join(tmp, "config.yaml"), "auth: none\n");
  writeFileSync(join(dirs.udd, "User", "settings.json"), JSON.stringify({
    "workbench.startupEditor": "none", "security.workspace.trust.enabled": false, "telemetry.telemetryLevel": "off",
    "extensions.autoUpdate": false, "extensions.autoCheckUpdates": false, "update.mode": "none",
    "workbench.colorTheme": "Default Dark Modern", "window.commandCenter": false, "workbench.tips.enabled": false,
    // Desktop VS Code's default (the web build's is "afterDelay", which would save unsaved buffers).
    "files.autoSave": "off",
    "pi.daemon.command": PI_RPC,
    "pi.daemon.args": ["--script", SCRIPT],
    // The tool tour runs unasked; the approval tests switch the policy to "ask" themselves.
    "pi.approvalPolicy": "auto",
  }, null, 2));
  return dirs;
}

function installVsix(dirs) {
  const run = spawnSync(process.execPath, [CODE_SERVER, "--config", join(dirs.tmp, "config.yaml"), "--user-data-dir", dirs.udd,
    "--extensions-dir", dirs.exts, "--install-extension", VSIX], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`installing the .vsix failed:\n${run.stdout}\n${run.stderr}`);
  log("installed", readdirSync(dirs.exts).filter((d) => d.startsWith("pi-rpc.")).join(", "));
}

async function startServer(dirs) {
  const server = spawn(process.execPath, [CODE_SERVER, "--config", join(dirs.tmp, "config.yaml"), "--bind-addr", "127.0.0.1:0",
    "--auth", "none", "--user-data-dir", dirs.udd, "--extensions-dir", dirs.exts, "--disable-telemetry",
    "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override"], {
    detached: true, stdio: ["ignore", "pipe", "pipe"],
    // The daemon's config (saved "Allow Always" rules among it) in the run's own folders, never the user's.
    env: { ...process.env, PI_RPC_SESSION_DIR: dirs.sessions, PI_VSCODE_TEST_OUT: OUT,
      PI_CODING_AGENT_DIR: join(dirs.tmp, "pi-agent"), XDG_CONFIG_HOME: join(dirs.tmp, "config") },
  });
  let serverLog = "";
  const port = await new Promise((resolvePort, reject) => {
    const onData = (chunk) => {
      serverLog += chunk;
      const m = /HTTP server listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(serverLog);
      if (m) resolvePort(Number(m[1]));
    };
    server.stdout.on("data", onData);
    server.stderr.on("data", onData);
    server.on("exit", (code) => reject(new Error(`code-server exited (${code}):\n${serverLog}`)));
  });
  return { server, port, log: () => serverLog };
}

async function openBrowser(dirs) {
  return chromium.launchPersistentContext(join(dirs.tmp, "chromium"), {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, viewport: { width: 1400, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}

/** Phase 1: the suite inside the extension host; resolves with its exit code. */
async function inHostSuite(context, port, dirs) {
  const page = await context.newPage();
  let done;
  const exitCode = new Promise((r) => (done = r));
  await page.exposeFunction("codeAutomationExit", (code) => done(code));
  await page.exposeFunction("codeAutomationLog", async (type, args) => {
    const text = (Array.isArray(args) ? args : [args]).map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ");
    const shot = /^@@screenshot(-page)? (\S+)/.exec(text);
    if (shot) {
      // `-page`: the whole workbench (the chat beside an editor it opened), else the side bar.
      if (shot[1]) await screenshotPage(page, shot[2]);
      else await screenshotChat(page, shot[2]);
      return;
    }
    // The suite's own lines go to the console; the workbench's chatter only to the log file.
    appendFileSync(join(OUT, "workbench.log"), `${text}\n`);
    if (/^(ok |FAIL |\d+ passed|@@bench)/.test(text)) console.log(text);
  });
  const remote = (p) => `vscode-remote://127.0.0.1:${port}${p}`;
  const payload = [["extensionDevelopmentPath", remote(join(EXT, "test", "host", "runner"))],
    ["extensionTestsPath", remote(SUITE)]];
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.ws1)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
  const code = await Promise.race([exitCode, sleep(180_000).then(() => "timeout")]);
  await page.close();
  return code;
}

async function screenshotChat(page, path) {
  const sidebar = page.locator(".part.sidebar").first();
  await sidebar.screenshot({ path });
  writeFileSync(`${path}.done`, "");
  log("screenshot", path);
}

async function screenshotPage(page, path) {
  await page.screenshot({ path });
  writeFileSync(`${path}.done`, "");
  log("screenshot", path);
}

/** Drags the side bar's sash to the right, so the screenshot shows the chat at a usual width. */
async function widenSidebar(page, by) {
  const box = await page.locator(".part.sidebar").first().boundingBox();
  if (!box) return;
  const x = box.x + box.width + 1;
  const y = box.y + box.height / 2;
  await page.mouse.move(x, y);
  await page.mouse.down();
  await page.mouse.move(x + by, y, { steps: 8 });
  await page.mouse.up();
  await sleep(400);
}

function daemonPids(marker) {
  const pids = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (cmd.some((a) => a.endsWith("pi-rpc")) && cmd.includes(marker)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

async function runCommand(page, title) {
  // On a busy machine the palette may open before the extension's commands are registered: retry.
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press("F1");
    const box = page.locator(".quick-input-widget .quick-input-box input").first();
    await box.waitFor();
    await box.fill(`>${title}`);
    try {
      await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 30_000 });
      await page.keyboard.press("Enter");
      return;
    } catch (error) {
      await page.keyboard.press("Escape");
      if (attempt === 4) throw error;
    }
  }
}

async function pickItem(page, label) {
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: label }).first();
  await row.waitFor();
  await row.click();
}

/** Phase 2: the user's path through the UI. */
async function uiEndToEnd(context, port, dirs) {
  const page = await context.newPage();
  const failures = [];
  const check = (ok, what) => {
    log(ok ? "ok  " : "FAIL", what);
    if (!ok) failures.push(what);
  };
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.ws2)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  await page.locator(".statusbar").waitFor();
  // The extension is active once its status bar item shows.
  await page.locator(".statusbar .statusbar-item", { hasText: "Pi" }).first().waitFor({ timeout: 60_000 });

  // An API key goes to SecretStorage and into the daemon's environment (anthropic models appear).
  await runCommand(page, "Pi: Set API Key");
  await pickItem(page, "anthropic");
  await page.locator(".quick-input-widget .quick-input-box input").first().fill("sk-test-not-a-real-key");
  await page.keyboard.press("Enter");

  await runCommand(page, "Pi: Open Chat");
  const view = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  const input = view.locator("textarea.input");
  await input.waitFor({ timeout: 30_000 });
  await input.fill("tour");
  await input.press("Enter");
  const answer = view.locator(".msg.assistant", { hasText: "opens the full log." });
  await answer.waitFor({ timeout: 60_000 });
  await view.locator(".tool[data-tool=edit] .status-done").waitFor();
  check(await view.locator(".tool[data-tool=bash] .tool-notice", { hasText: "Full output" }).count() === 1, "bash card shows Pi's truncation notice");
  check(await view.locator(".code-block .code-copy").count() >= 1, "code block has a Copy button");
  await sleep(300);
  await widenSidebar(page, 180);
  await screenshotChat(page, join(OUT, "chat-after-tool-session.png"));

  // Pi: Name Session names it; Pi: Sessions lists it by that name after the reload (below).
  await runCommand(page, "Pi: Name Session");
  await page.locator(".quick-input-widget .quick-input-box input").first().fill("Tool tour");
  await page.keyboard.press("Enter");
  await page.locator(".notifications-toasts .notification-list-item", { hasText: "Pi session named “Tool tour”" }).first()
    .waitFor({ timeout: 30_000 })
    .then(() => check(true, "Pi: Name Session named the session"), () => check(false, "Pi: Name Session named the session"));

  // Approvals: "Pi: Approval Policy" → ask; an edit then waits with its diff editor and the card's
  // buttons (screenshot), and Allow in the card runs it.
  await runCommand(page, "Pi: Approval Policy");
  await pickItem(page, "ask");
  await view.locator("button.chip.policy", { hasText: "approvals: ask" }).waitFor({ timeout: 30_000 })
    .then(() => check(true, "the policy picker set ask"), () => check(false, "the policy picker set ask"));
  await input.fill("edit farewell bye");
  await input.press("Enter");
  const allow = view.locator(".tool-approval .approve-allow");
  await allow.waitFor({ timeout: 30_000 });
  const diffTab = page.locator(".tabs-container .tab", { hasText: "waiting for approval" });
  await diffTab.first().waitFor({ timeout: 30_000 })
    .then(() => check(true, "the approval opened a diff editor"), () => check(false, "the approval opened a diff editor"));
  check(await page.locator(".statusbar-item", { hasText: "waiting for approval" }).count() === 1, "the status bar says waiting for approval");
  await sleep(500);
  await page.screenshot({ path: join(OUT, "approval.png") });
  log("screenshot", join(OUT, "approval.png"));
  await allow.click();
  await view.locator(".msg.assistant", { hasText: "Changed the farewell." }).waitFor({ timeout: 30_000 })
    .then(() => check(true, "Allow in the card ran the edit"), () => check(false, "Allow in the card ran the edit"));
  check(readFileSync(join(dirs.ws2, "src", "farewell.py"), "utf8").includes("Goodbye"), "the allowed edit is on disk");
  await diffTab.first().waitFor({ state: "detached", timeout: 30_000 })
    .then(() => check(true, "the diff editor closed after the answer"), () => check(false, "the diff editor closed after the answer"));

  // With the chat hidden (the Explorer shown instead), the question comes as a notification.
  await input.fill("edit farewell later");
  await input.press("Enter");
  await runCommand(page, "View: Show Explorer");
  const question = page.locator(".notifications-toasts .notification-list-item", { hasText: "Pi asks: Edit src/farewell.py" }).first();
  await question.waitFor({ timeout: 30_000 })
    .then(() => check(true, "a notification asks while the chat is hidden"), () => check(false, "a notification asks while the chat is hidden"));
  await question.locator(".monaco-button", { hasText: /^Allow$/ }).first().click().catch(() => undefined);
  for (let i = 0; i < 50 && !readFileSync(join(dirs.ws2, "src", "farewell.py"), "utf8").includes("See you"); i++) await sleep(200);
  check(readFileSync(join(dirs.ws2, "src", "farewell.py"), "utf8").includes("See you"), "Allow in the notification ran the edit");
  await runCommand(page, "Pi: Open Chat");
  await view.locator(".msg.assistant", { hasText: "Changed it while you were away." }).waitFor({ timeout: 30_000 }).catch(() => undefined);

  // Model picker: models/list (now with the anthropic models the key unlocked), model/set.
  await view.locator("button.chip.model").click();
  await pickItem(page, "anthropic/claude-sonnet-4-6");
  await view.locator("button.chip.model", { hasText: "anthropic/claude-sonnet-4-6" }).waitFor({ timeout: 30_000 })
    .then(() => check(true, "model picker switched the model"), () => check(false, "model picker switched the model"));

  // Tools panel: untick bash; the daemon's tools/list no longer has it active.
  await runCommand(page, "Pi: Show Tools");
  const bashRow = page.locator(".quick-input-list .monaco-list-row", { hasText: "bash" }).first();
  await bashRow.waitFor();
  await bashRow.locator("input[type=checkbox], .monaco-checkbox, .quick-input-list-checkbox").first().click();
  // Accept only once the untick has landed (the row says so), and with the OK button: an Enter
  // pressed while the list is still taking the click was sometimes lost, and no pick came back.
  await page.locator('.quick-input-list .monaco-list-row[aria-checked="false"]', { hasText: "bash" }).first().waitFor({ timeout: 30_000 });
  await page.locator(".quick-input-widget .quick-input-action .monaco-button", { hasText: "OK" }).first().click();
  const toast = page.locator(".notifications-toasts .notification-list-item", { hasText: "Pi tools:" }).first();
  await toast.waitFor({ timeout: 30_000 });
  const toastText = await toast.innerText();
  check(toastText.includes("read") && !/\bbash\b/.test(toastText), `tools toggle: ${toastText.trim()}`);

  // A daemon killed while the chat is on screen: the chat says so (with Restart); no toast, and the
  // next prompt's automatic restart leaves no stale message up.
  for (const pid of daemonPids(dirs.ws2)) process.kill(pid, "SIGKILL");
  await view.locator(".notice.error", { hasText: "killed by SIGKILL" }).first().waitFor({ timeout: 30_000 })
    .then(() => check(true, "the chat says the daemon was killed"), () => check(false, "the chat says the daemon was killed"));
  await input.fill("hello after the kill");
  await input.press("Enter");
  await view.locator(".notice", { hasText: "the session continues" }).first().waitFor({ timeout: 30_000 })
    .then(() => check(true, "the next prompt restarted the daemon into its session"), () => check(false, "the next prompt restarted the daemon into its session"));
  const stale = await page.locator(".notifications-toasts .notification-list-item", { hasText: "killed by SIGKILL" }).count();
  check(stale === 0 && await view.locator(".notice", { hasText: "killed by SIGKILL" }).count() === 0,
    `no message of the death is left after the restart (toasts: ${stale})`);

  // Reloading the window leaves no daemon behind.
  const before = daemonPids(dirs.ws2); // this window's daemons: their --cwd is its folder
  check(before.length >= 1, `a daemon runs before the reload (${before.join(",")})`);
  await runCommand(page, "Developer: Reload Window");
  await sleep(2000);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  let left = before;
  for (let i = 0; i < 50 && left.length > 0; i++) {
    await sleep(200);
    left = before.filter((pid) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z "));
  }
  check(left.length === 0, `reloading the window leaves no daemon (left: ${left.join(",") || "none"})`);

  // After the reload the chat holds the conversation again, from the session's file.
  await page.locator(".statusbar .statusbar-item", { hasText: "Pi" }).first().waitFor({ timeout: 60_000 });
  await runCommand(page, "Pi: Open Chat");
  const reloaded = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await reloaded.locator(".msg.user .bubble", { hasText: "edit farewell later" }).first().waitFor({ timeout: 30_000 })
    .then(() => check(true, "the reloaded window reopened the conversation"), () => check(false, "the reloaded window reopened the conversation"));
  check(await reloaded.locator(".tool[data-tool=bash] .tool-notice").count() >= 1, "the reopened conversation has its tool cards");

  // Session history: session/list by title and date, then session/load replays the tool session.
  await runCommand(page, "Pi: Sessions");
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "Tool tour" }).first();
  await row.waitFor();
  const rowText = await row.innerText();
  check(rowText.includes(String(new Date().getFullYear())), `the session picker shows the session's date: ${rowText.replace(/\s+/g, " ")}`);
  await pickItem(page, "Tool tour"); // the name given above: the list's label for that session
  const restored = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await restored.locator(".tool[data-tool=bash] .tool-notice").waitFor({ timeout: 20_000 })
    .then(() => check(true, "Pi: Sessions reopened the tool session with its cards"),
      () => check(false, "Pi: Sessions reopened the tool session with its cards"));
  await page.close();
  return failures;
}

async function main() {
  if (!existsSync(CODE_SERVER)) throw new Error(`no VS Code host at ${HOST}: run scripts/setup-host.sh`);
  if (!existsSync(VSIX)) throw new Error(`no ${VSIX}: run npm run package`);
  const dirs = prepare();
  installVsix(dirs);
  const { server, port, log: serverLog } = await startServer(dirs);
  log("code-server on port", port);
  const context = await openBrowser(dirs);
  let failed = false;
  try {
    const code = await inHostSuite(context, port, dirs);
    log("extension host exit code:", code);
    failed ||= code !== 0;
    if (!process.env.PI_VSCODE_SKIP_UI) {
      const failures = await uiEndToEnd(context, port, dirs);
      failed ||= failures.length > 0;
    }
  } catch (error) {
    console.error(error);
    console.error(serverLog().slice(-3000));
    failed = true;
  } finally {
    await context.close().catch(() => undefined);
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {
      // already gone
    }
    await sleep(500);
    for (const pid of daemonPids(SCRIPT)) {
      log("FAIL: daemon left running after the host stopped:", pid);
      failed = true;
    }
    if (!failed) rmSync(dirs.tmp, { recursive: true, force: true });
  }
  log(failed ? "FAILED" : "PASSED", `(output in ${OUT})`);
  process.exit(failed ? 1 : 0);
}

await main();
