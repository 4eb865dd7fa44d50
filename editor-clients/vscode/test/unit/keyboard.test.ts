// The keyboard commands are contributed with their bindings, each scoped by a `when` clause (but
// the global Focus Chat), none two on one key in the same scope, and each listed in the README.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { EXT_ROOT } from "./helpers";

interface Binding { command: string; key: string; mac?: string; when?: string }
const manifest = JSON.parse(readFileSync(join(EXT_ROOT, "package.json"), "utf8")) as {
  contributes: { commands: { command: string }[]; keybindings: Binding[] };
};
const KEYBOARD = ["pi.focusChat", "pi.send", "pi.abort", "pi.accept", "pi.reject", "pi.nextCard", "pi.previousCard"];

describe("keyboard commands", () => {
  test("each is a contributed command with a default binding, scoped unless it is Focus Chat", () => {
    const commands = new Set(manifest.contributes.commands.map((c) => c.command));
    for (const id of KEYBOARD) {
      assert.ok(commands.has(id), `${id} is contributed`);
      const binding = manifest.contributes.keybindings.find((b) => b.command === id);
      assert.ok(binding, `${id} has a default key`);
      if (id !== "pi.focusChat") assert.ok(binding.when, `${id} has a when clause`);
    }
  });

  test("no two bindings share a key in the same scope", () => {
    const seen = new Set<string>();
    for (const b of manifest.contributes.keybindings) {
      const id = `${b.key}|${b.when ?? ""}`;
      assert.ok(!seen.has(id), `${b.key} bound twice`);
      seen.add(id);
    }
  });

  test("the README's keyboard section lists each command and its key", () => {
    const readme = readFileSync(join(EXT_ROOT, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Keyboard"), readme.indexOf("\n## ", readme.indexOf("## Keyboard") + 5));
    for (const b of manifest.contributes.keybindings) {
      assert.ok(section.includes(`\`${b.command}\``), `${b.command} is in the README's keyboard section`);
      const shown = b.key.split("+").map((k) => k[0].toUpperCase() + k.slice(1)).join("+");
      assert.ok(section.toLowerCase().includes(shown.toLowerCase()), `${shown} is in the README's keyboard section`);
    }
  });
});
