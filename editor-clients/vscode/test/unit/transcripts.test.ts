// The golden transcripts replayed against the client layer: a scripted peer answers each request
// the client puts on the wire with the recorded messages, and the client must decode every result,
// error and event exactly as recorded.
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import { StreamMessageReader, StreamMessageWriter, type Message as RpcMessage } from "vscode-jsonrpc/node";
import { PiClient } from "../../src/client/piClient";
import type { AgentEvent } from "../../src/protocol";
import { applyEvent, emptyChat } from "../../src/common/chatModel";
import { type Entry, readTranscript, transcriptNames } from "./helpers";

type Outcome = { method: string; result?: unknown; error?: { code: number; message: string } };

/** A peer that plays the daemon's side of a transcript. */
function replayPeer(entries: Entry[], input: PassThrough, output: PassThrough): { mismatches: string[] } {
  const reader = new StreamMessageReader(input);
  const writer = new StreamMessageWriter(output);
  const mismatches: string[] = [];
  let cursor = 0;
  reader.listen((message: RpcMessage) => {
    const sent = message as { id?: number; method?: string; params?: unknown };
    if (sent.method === "exit") return;
    while (cursor < entries.length && entries[cursor].dir !== "send") cursor++;
    const expected = entries[cursor++];
    if (!expected || expected.msg.method !== sent.method) {
      mismatches.push(`sent ${sent.method}, transcript expects ${expected?.msg.method}`);
      return;
    }
    const params = (v: unknown): unknown => (v === undefined || v === null ? {} : v);
    assert.deepEqual(params(sent.params), params(expected.msg.params), `params of ${sent.method}`);
    for (; cursor < entries.length && entries[cursor].dir !== "send"; cursor++) {
      const recv = entries[cursor].msg;
      void writer.write(("id" in recv ? { ...recv, id: sent.id } : recv) as RpcMessage);
    }
  });
  return { mismatches };
}

async function replay(entries: Entry[]): Promise<{ outcomes: Outcome[]; events: AgentEvent[]; mismatches: string[] }> {
  const toPeer = new PassThrough();
  const toClient = new PassThrough();
  const peer = replayPeer(entries, toPeer, toClient);
  const client = new PiClient(toClient, toPeer);
  const events: AgentEvent[] = [];
  client.onEvent((e) => events.push(e));
  const outcomes: Outcome[] = [];
  for (const entry of entries) {
    if (entry.dir !== "send" || entry.msg.id === undefined) continue;
    const method = entry.msg.method as "state";
    try {
      outcomes.push({ method, result: await client.request(method, entry.msg.params as never) });
    } catch (error) {
      const { code, message } = error as { code: number; message: string };
      outcomes.push({ method, error: { code, message } });
    }
  }
  client.dispose();
  return { outcomes, events, mismatches: peer.mismatches };
}

function recorded(entries: Entry[]): { outcomes: Outcome[]; events: unknown[] } {
  const methods = new Map(entries.filter((e) => e.dir === "send").map((e) => [e.msg.id, e.msg.method ?? ""]));
  const outcomes: Outcome[] = [];
  const events: unknown[] = [];
  for (const { dir, msg } of entries) {
    if (dir !== "recv") continue;
    if (msg.method === "agent/event") events.push(msg.params);
    else if (msg.error) outcomes.push({ method: methods.get(msg.id) ?? "", error: { code: msg.error.code, message: msg.error.message } });
    else outcomes.push({ method: methods.get(msg.id) ?? "", result: msg.result });
  }
  return { outcomes, events };
}

describe("golden transcripts through PiClient", () => {
  for (const name of transcriptNames()) {
    test(name, async () => {
      const entries = readTranscript(name);
      const got = await replay(entries);
      const want = recorded(entries);
      assert.deepEqual(got.mismatches, []);
      assert.deepEqual(got.outcomes, want.outcomes);
      assert.deepEqual(got.events, want.events);
    });
  }
});

describe("the tour transcript in the chat model", () => {
  test("every tool call becomes a finished card with what the user needs", async () => {
    const { events } = await replay(readTranscript("tour.jsonl"));
    const chat = emptyChat();
    for (const event of events) applyEvent(chat, event);
    const cards = Object.values(chat.tools);
    assert.deepEqual(cards.map((c) => [c.name, c.status]), [
      ["read", "done"], ["grep", "done"], ["edit", "done"], ["write", "done"], ["bash", "done"],
    ].slice(0, cards.length));
    assert.ok(cards.length >= 5, `expected five tool cards, got ${cards.length}`);
    const edit = cards.find((c) => c.name === "edit")!;
    assert.match(edit.patch ?? "", /^- {4}return f"Helo/m);
    const bash = cards.find((c) => c.name === "bash")!;
    assert.equal(bash.truncation?.truncatedBy, "lines");
    assert.equal(bash.fullOutputPath, "<log>");
    assert.match(bash.output, /\[Showing lines \d+-\d+ of \d+\. Full output: <log>\]$/);
    assert.equal(chat.running, false);
    assert.equal(chat.activity.kind, "idle");
    const assistant = chat.items.find((i) => i.kind === "assistant");
    assert.ok(assistant?.kind === "assistant" && assistant.blocks[0].kind === "thinking");
  });
});
