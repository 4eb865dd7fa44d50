// `@` mentions: the query the picker filters by, the token a pick puts in the text, which chosen
// mentions a message still names, and the context blocks the prompt carries (and the chat hides).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  capText, contextBlock, contextRefs, formatProblems, insertMention, liveMentions, type Mention, mentionQuery,
  numberLines, removeMention, typedText, withContext,
} from "../../src/common/mentions";
import { prng } from "./helpers";

const file = (path: string): Mention => ({ kind: "file", token: path, path });
const symbol = (name: string): Mention => ({ kind: "symbol", token: `symbol:${name}`, path: "src/a.py", lines: { first: 4, last: 5 } });

describe("the @ picker's query", () => {
  test("is the word after an @ at the caret, at the start or after a space", () => {
    assert.equal(mentionQuery("explain @gre"), "gre");
    assert.equal(mentionQuery("@"), "");
    assert.equal(mentionQuery("see @symbol:gre"), "symbol:gre");
    assert.equal(mentionQuery("see @src/"), "src/");
    assert.equal(mentionQuery("mail me@example"), undefined);
    assert.equal(mentionQuery("@src/a.py and more"), undefined);
  });

  test("a pick replaces the query with its token and a space, the caret after it", () => {
    const picked = insertMention("explain @gre please", 12, file("src/greet.py"));
    assert.deepEqual(picked, { text: "explain @src/greet.py  please", caret: 22 });
  });
});

describe("which chosen mentions a message names", () => {
  test("a token still in the text, as a whole word, once each", () => {
    const chosen = [file("src/a.py"), symbol("greet"), file("src/a.py"), file("b.md")];
    assert.deepEqual(liveMentions("look at @src/a.py, then @symbol:greet.", chosen).map((m) => m.token), ["src/a.py", "symbol:greet"]);
    assert.deepEqual(liveMentions("look at @src/a.pyc", chosen), []);
    assert.deepEqual(liveMentions("look at src/a.py", chosen), []);
  });

  test("removing a chip's token leaves the rest of the text", () => {
    assert.equal(removeMention("fix @src/a.py now", "src/a.py"), "fix now");
    assert.equal(removeMention("@problems fix them", "problems"), "fix them");
  });

  test("seeded: a picked token is live until it is removed (300 runs)", () => {
    const rand = prng(26);
    const alphabet = "ab./_-:xyz";
    const word = (n: number) => Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join("");
    for (let run = 0; run < 300; run++) {
      const token = `${word(1 + Math.floor(rand() * 8))}q`;
      const prefix = rand() < 0.5 ? "" : `${word(4)} `;
      const text = `${prefix}@${token.slice(0, Math.floor(rand() * token.length))}`;
      const picked = insertMention(text, text.length, file(token));
      const full = `${picked.text}${word(3)}`;
      assert.deepEqual(liveMentions(full, [file(token)]).map((m) => m.token), [token], full);
      assert.deepEqual(liveMentions(removeMention(full, token), [file(token)]), [], full);
    }
  });
});

describe("the context a mention becomes", () => {
  test("file contents with line numbers, cut at the cap with what was left out", () => {
    assert.equal(numberLines("a\nb\n"), "1  a\n2  b");
    assert.equal(numberLines("x\ny", 9), " 9  x\n10  y");
    const long = Array.from({ length: 100 }, (_, i) => `line ${i + 1}`).join("\n");
    const cut = capText(long, 50);
    assert.ok(cut.length < 100);
    assert.match(cut, /^line 1\n/);
    assert.match(cut, /\[… \d+ more lines not included\]$/);
    assert.equal(capText("short", 50), "short");
  });

  test("problems as path:line: severity message, errors first", () => {
    assert.equal(formatProblems([
      { path: "b.py", line: 3, severity: "warning", message: "unused\nimport", source: "ruff" },
      { path: "a.py", line: 7, severity: "error", message: "undefined name 'x'" },
    ]), "a.py:7: error undefined name 'x'\nb.py:3: warning unused import (ruff)");
    assert.equal(formatProblems([]), "No problems.");
  });

  test("the chat shows the words typed and the refs, not the blocks", () => {
    const prompt = withContext("explain @src/a.py", [contextBlock("src/a.py", "1  x = 1\n"), contextBlock("problems", "No problems.")]);
    assert.equal(prompt, 'explain @src/a.py\n\n<context ref="src/a.py">\n1  x = 1\n</context>\n\n<context ref="problems">\nNo problems.\n</context>');
    assert.equal(typedText(prompt), "explain @src/a.py");
    assert.deepEqual(contextRefs(prompt), ["src/a.py", "problems"]);
    assert.equal(typedText("no context"), "no context");
    // A message that only quotes a block, followed by more words, is shown whole.
    const quoted = 'what is\n\n<context ref="x">\ny\n</context>\n\nabout?';
    assert.equal(typedText(quoted), quoted);
    assert.deepEqual(contextRefs(quoted), []);
  });
});
