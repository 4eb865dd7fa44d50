// The documented build on a fresh clone: `npm run package` with no out/ yet writes the .vsix, and
// the .vsix holds every image its README shows (the Marketplace and `code` render it from there).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { EXT_ROOT } from "./helpers";

const copies: string[] = [];
after(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});

/** The names stored in a zip (a .vsix): each is in its central directory as plain bytes. */
function zipNames(path: string): string[] {
  const data = readFileSync(path);
  const names: string[] = [];
  for (let at = data.indexOf("PK\x01\x02"); at >= 0; at = data.indexOf("PK\x01\x02", at + 4)) {
    const length = data.readUInt16LE(at + 28);
    names.push(data.subarray(at + 46, at + 46 + length).toString("utf8"));
  }
  return names;
}

describe("npm run package", () => {
  test("on a fresh clone (no out/) writes out/pi-vscode.vsix with the README's screenshots", () => {
    const clone = mkdtempSync(join(tmpdir(), "pi-vscode-clone-"));
    copies.push(clone);
    const tracked = ["package.json", "package-lock.json", "README.md", ".vscodeignore", "tsconfig.json", "media", "scripts", "src"];
    for (const name of tracked) cpSync(join(EXT_ROOT, name), join(clone, name), { recursive: true });
    symlinkSync(join(EXT_ROOT, "node_modules"), join(clone, "node_modules"));
    assert.ok(!existsSync(join(clone, "out")));
    const run = spawnSync("npm", ["run", "package"], { cwd: clone, encoding: "utf8", timeout: 240_000 });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const names = zipNames(join(clone, "out", "pi-vscode.vsix"));
    const readme = readFileSync(join(EXT_ROOT, "README.md"), "utf8");
    const images = [...readme.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]);
    assert.ok(images.length >= 2, `the README shows screenshots: ${images.join(", ")}`);
    for (const image of images) assert.ok(names.includes(`extension/${image}`), `${image} is in the .vsix (${names.join(", ")})`);
    assert.ok(names.includes("extension/readme.md") || names.includes("extension/README.md"), "the README is in the .vsix");
  });
});
