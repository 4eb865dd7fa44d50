// The generated TypeScript types must match protocol/schema.json.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { test } from "node:test";
import { EXT_ROOT } from "./helpers";

test("src/protocol/types.ts is up to date with protocol/schema.json (else: npm run gen-types)", () => {
  const run = spawnSync(process.execPath, [join(EXT_ROOT, "scripts", "gen-types.mjs"), "--check"], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr || "types are stale: run `npm run gen-types` in editor-clients/vscode");
});
