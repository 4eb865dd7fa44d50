// Pi's own ignore matcher (the npm `ignore` package its skill loader uses), as an oracle: each stdin
// line is {"rules": [...], "paths": [...]}; each answer line is the paths' verdicts.
import { createRequire } from "node:module";
import { createInterface } from "node:readline";

const require = createRequire(process.argv[2]);
const ignore = require("ignore");

for await (const line of createInterface({ input: process.stdin })) {
  const { rules, paths } = JSON.parse(line);
  const matcher = ignore().add(rules);
  process.stdout.write(`${JSON.stringify(paths.map((path) => matcher.ignores(path)))}\n`);
}
