// Pi's own command-line reading, as an oracle for tests/unit/test_pi_command_line.py: Pi's
// `parseArgs` and its model resolver (`resolveCliModel`, `resolveModelScope`) from the npm package
// in tests/pi_client. Each stdin line is a question, each stdout line its answer:
//   {"kind": "args", "argv": [...]}                        -> what parseArgs made of it
//   {"kind": "model", "provider", "model", "models": [...]} -> {model, thinkingLevel, warning, error}
//   {"kind": "scope", "patterns": [...], "models": [...]}   -> [{model, thinkingLevel}]
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const dist = join(process.argv[2], "node_modules", "@mariozechner", "pi-coding-agent", "dist");
const { parseArgs } = await import(pathToFileURL(join(dist, "cli", "args.js")).href);
const { resolveCliModel, resolveModelScope } = await import(pathToFileURL(join(dist, "core", "model-resolver.js")).href);
console.warn = () => {}; // resolveModelScope warns on the console; the answers are what count

const named = (model) => (model ? `${model.provider}/${model.id}` : null);

for await (const line of createInterface({ input: process.stdin })) {
  const question = JSON.parse(line);
  let answer;
  if (question.kind === "args") {
    const parsed = parseArgs(question.argv);
    answer = { ...parsed, unknownFlags: Object.fromEntries(parsed.unknownFlags) };
  } else if (question.kind === "model") {
    const registry = { getAll: () => question.models };
    const found = resolveCliModel({ cliProvider: question.provider, cliModel: question.model, modelRegistry: registry });
    answer = { model: named(found.model), thinkingLevel: found.thinkingLevel ?? null, warning: found.warning ?? null, error: found.error ?? null };
  } else {
    const registry = { getAvailable: async () => question.models };
    const scope = await resolveModelScope(question.patterns, registry);
    answer = scope.map((scoped) => ({ model: named(scoped.model), thinkingLevel: scoped.thinkingLevel ?? null }));
  }
  process.stdout.write(`${JSON.stringify(answer)}\n`);
}
