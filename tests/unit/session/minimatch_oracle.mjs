// Pi's glob matcher for its settings' resource filters (the npm `minimatch` its package manager
// uses, default options), as an oracle: each stdin line is {"patterns": [...], "paths": [...]};
// each answer line is, for each pattern, each path's verdict.
import { createRequire } from "node:module";
import { createInterface } from "node:readline";

const require = createRequire(process.argv[2]);
const { minimatch } = require("minimatch");

for await (const line of createInterface({ input: process.stdin })) {
  const { patterns, paths } = JSON.parse(line);
  process.stdout.write(`${JSON.stringify(patterns.map((p) => paths.map((path) => minimatch(path, p))))}\n`);
}
