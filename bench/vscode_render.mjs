// Benchmark of the VS Code extension under a 20,000-delta answer, in a real VS Code host
// (code-server) against the real daemon: the extension host's event-loop delay while the answer
// streams, and the time from `agent_end` to the chat view showing the answer's end.
// Needs the host and build of `make test-vscode` (editor-clients/vscode/scripts/test.sh) first.
//   node bench/vscode_render.mjs [--runs N] [--deltas N]     (defaults: 3 runs, 20000 deltas)
// Prints each run and the medians, with the git revision, CPU count and load average before/after
// (other jobs share the machine: read the figures together with the load).
import { execSync, spawnSync } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const EXT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "editor-clients", "vscode");
const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
};
const DELTAS = option("--deltas", 20000);
const RUNS = option("--runs", 3);
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

function runOnce() {
  const run = spawnSync(process.execPath, [join(EXT, "test", "host", "run.mjs")], {
    encoding: "utf8", maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, PI_VSCODE_SUITE: join(EXT, "out", "test", "host", "bench.js"), PI_VSCODE_SCRIPT: script, PI_VSCODE_SKIP_UI: "1" },
  });
  if (run.status !== 0) {
    console.error(run.stdout.slice(-4000), run.stderr.slice(-4000));
    process.exit(1);
  }
  return JSON.parse(readFileSync(join(EXT, "out", "host", "bench.json"), "utf8"));
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");
let revision = "unknown";
try {
  revision = execSync("git rev-parse --short HEAD", { cwd: EXT, encoding: "utf8" }).trim();
} catch {
  // not a checkout
}
console.log(`pi-rpc ${revision}, ${cpus().length} CPUs, load before: ${load()}`);
console.log(`answer: ${text.length} characters in ${DELTAS} text deltas of ${CHUNK} characters, ${RUNS} runs`);
const results = [];
for (let i = 0; i < RUNS; i++) {
  const r = runOnce();
  results.push(r);
  console.log(`run ${i + 1}: streamed in ${r.streamMs} ms; host loop delay p50 ${r.hostLoopDelayMs.p50.toFixed(1)} / p99 ` +
    `${r.hostLoopDelayMs.p99.toFixed(1)} / max ${r.hostLoopDelayMs.max.toFixed(1)} ms; host CPU ${r.hostCpuMs} ms; view ` +
    `${r.view.frames} frames, ${r.view.renderMs} ms rendering, longest frame ${r.view.longestFrameMs} ms; ` +
    `agent_end → final render ${r.agentEndToFinalRenderMs} ms (query round trip ${r.queryRoundTripMs} ms)`);
}
const m = (f) => median(results.map(f));
console.log(`median: host loop delay p99 ${m((r) => r.hostLoopDelayMs.p99).toFixed(1)} ms, max ${m((r) => r.hostLoopDelayMs.max).toFixed(1)} ms; ` +
  `host CPU ${m((r) => r.hostCpuMs)} ms; longest view frame ${m((r) => r.view.longestFrameMs)} ms; ` +
  `agent_end → final render ${m((r) => r.agentEndToFinalRenderMs)} ms`);
console.log(`load after: ${load()}`);
rmSync(dir, { recursive: true, force: true });
