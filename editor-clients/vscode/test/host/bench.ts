// In-host part of bench/vscode_render.mjs: one answer of many deltas (the script decides how many)
// streamed into the chat view. Measures the extension host's event-loop delay during the stream
// and the time from `agent_end` reaching the host to the view showing the answer's last words.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import * as vscode from "vscode";
import type { PiApi } from "../../src/extension/extension";

const SENTINEL = "END-OF-ANSWER";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function sawSentinel(api: PiApi): Promise<boolean> {
  return (await api.chatView.query(".msg.assistant .markdown")).some((t) => t.includes(SENTINEL));
}

async function renderStats(api: PiApi): Promise<{ frames: number; totalMs: number; maxMs: number }> {
  const [text] = await api.chatView.query("#render-stats");
  return JSON.parse(text || '{"frames":0,"totalMs":0,"maxMs":0}') as { frames: number; totalMs: number; maxMs: number };
}

export async function run(): Promise<void> {
  const api = await vscode.extensions.getExtension<PiApi>("pi-rpc.pi-vscode")!.activate();
  await vscode.commands.executeCommand("pi.openChat");
  await api.chatView.whenReady();
  await api.session()!.ensure();

  // Query round trip with nothing to render: the resolution of the render measurement.
  const rttStart = performance.now();
  for (let i = 0; i < 20; i++) await api.chatView.query("body");
  const queryRttMs = (performance.now() - rttStart) / 20;

  let deltas = 0;
  let firstDeltaAt = 0;
  let agentEndAt = 0;
  const ended = new Promise<void>((resolve) => api.onDidReceiveEvent((event) => {
    if (event.type === "message_update" && event.assistantMessageEvent.type === "text_delta") {
      if (deltas++ === 0) firstDeltaAt = performance.now();
    } else if (event.type === "agent_end") {
      agentEndAt = performance.now();
      resolve();
    }
  }));
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const cpuBefore = process.cpuUsage();
  const framesBefore = await renderStats(api);
  api.chatView.post({ type: "addContext", text: "big" });
  await api.chatView.query("button.send", true);
  await ended;
  lag.disable();
  const cpu = process.cpuUsage(cpuBefore);
  while (!(await sawSentinel(api))) await sleep(1);
  const renderedAt = performance.now();
  await sleep(200);
  const frames = await renderStats(api);

  const result = {
    deltas,
    streamMs: Math.round(agentEndAt - firstDeltaAt),
    hostCpuMs: Math.round((cpu.user + cpu.system) / 1000),
    view: { frames: frames.frames - framesBefore.frames, renderMs: Math.round(frames.totalMs - framesBefore.totalMs),
      longestFrameMs: Math.round(frames.maxMs) },
    hostLoopDelayMs: { p50: lag.percentile(50) / 1e6, p99: lag.percentile(99) / 1e6, max: lag.max / 1e6 },
    agentEndToFinalRenderMs: Math.round(renderedAt - agentEndAt),
    queryRoundTripMs: Number(queryRttMs.toFixed(1)),
  };
  console.log(`@@bench ${JSON.stringify(result)}`);
  if (process.env.PI_VSCODE_TEST_OUT) writeFileSync(join(process.env.PI_VSCODE_TEST_OUT, "bench.json"), JSON.stringify(result, null, 2));
}
