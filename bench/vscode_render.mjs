// Benchmark of the VS Code extension under a 20,000-delta answer, in a real VS Code host
// (code-server) against the real daemon: the extension host's event-loop delay while the answer
// streams, and the time from `agent_end` to the chat view showing the answer's end.
// Needs the host and build of `make test-vscode` (editor-clients/vscode/scripts/test.sh) first.
//   node bench/vscode_render.mjs [deltas]        (default 20000)
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const EXT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "editor-clients", "vscode");
const DELTAS = Number(process.argv[2] ?? 20000);
const CHUNK = 8;

// A Markdown answer of paragraphs and code blocks, CHUNK characters per delta.
function answer(deltas) {
  const parts = [];
  let length = 0;
  for (let i = 0; length < deltas * CHUNK - 40; i++) {
    const part = i % 5 === 4
      ? `\`\`\`python\ndef step_${i}(x: int) -> int:\n    return x * ${i}  # keep going\n\`\`\`\n\n`
      : `Paragraph ${i}: the agent explains **step ${i}** with \`inline code\` and a [link](https://example.com/${i}).\n\n`;
    parts.push(part);
    length += part.length;
  }
  const text = parts.join("");
  return `${text.slice(0, deltas * CHUNK - 40)}\n\nEND-OF-ANSWER`;
}

const dir = mkdtempSync(join(tmpdir(), "pi-vscode-bench-"));
const script = join(dir, "script.json");
const text = answer(DELTAS);
writeFileSync(script, JSON.stringify({ replies: [{ match: "^big$", repeat: true, turns: [[{ text, chunk: CHUNK }]] }] }));

const run = spawnSync(process.execPath, [join(EXT, "test", "host", "run.mjs")], {
  encoding: "utf8", maxBuffer: 64 * 1024 * 1024,
  env: { ...process.env, PI_VSCODE_SUITE: join(EXT, "out", "test", "host", "bench.js"), PI_VSCODE_SCRIPT: script, PI_VSCODE_SKIP_UI: "1" },
});
if (run.status !== 0) {
  console.error(run.stdout.slice(-4000), run.stderr.slice(-4000));
  process.exit(1);
}
const result = JSON.parse(readFileSync(join(EXT, "out", "host", "bench.json"), "utf8"));
console.log(`answer: ${text.length} characters in ${result.deltas} text deltas, streamed in ${result.streamMs} ms`);
console.log(`extension-host event-loop delay while streaming: p50 ${result.hostLoopDelayMs.p50.toFixed(1)} ms, ` +
  `p99 ${result.hostLoopDelayMs.p99.toFixed(1)} ms, max ${result.hostLoopDelayMs.max.toFixed(1)} ms`);
console.log(`extension host CPU while streaming: ${result.hostCpuMs} ms; chat view: ${result.view.frames} frames, ` +
  `${result.view.renderMs} ms rendering in all, longest frame ${result.view.longestFrameMs} ms`);
console.log(`agent_end → final render in the chat view: ${result.agentEndToFinalRenderMs} ms ` +
  `(measured by polling the view; one query round trip is ${result.queryRoundTripMs} ms)`);
