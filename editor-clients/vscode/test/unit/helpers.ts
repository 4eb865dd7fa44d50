// Shared by the unit tests: paths, and reading the golden transcripts.
import { readFileSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";

export const EXT_ROOT = resolve(__dirname, "..", "..", "..");
export const REPO_ROOT = resolve(EXT_ROOT, "..", "..");
export const TRANSCRIPTS = join(REPO_ROOT, "protocol", "transcripts");
export const PI_RPC = process.env.PI_RPC ?? join(REPO_ROOT, ".venv", "bin", "pi-rpc");

export interface Entry {
  dir: "send" | "recv" | "meta";
  msg: { id?: number | null; method?: string; params?: unknown; result?: unknown; error?: { code: number; message: string } };
}

export function transcriptNames(): string[] {
  return readdirSync(TRANSCRIPTS).filter((f) => f.endsWith(".jsonl")).sort();
}

export function readTranscript(name: string): Entry[] {
  return readFileSync(join(TRANSCRIPTS, name), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as Entry);
}

/** A small seeded PRNG, so the property tests are deterministic. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
