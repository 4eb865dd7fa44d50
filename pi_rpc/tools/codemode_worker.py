"""The codemode sandbox's child process: one QuickJS runtime running one script.

It runs in its own process because the QuickJS binding holds the GIL while JavaScript runs: in the
daemon, `while (true) {}` would stall every reply until the CPU limit fired, and no abort could
reach it. Here the daemon kills the child instead (abort, wall time), and a crash of the engine
takes only this process down. The child has no tools of its own: each `tools.<name>()` call is a
line to the daemon, which runs it through the agent's tool pipeline and sends the result back.

Lines on stdin/stdout, one JSON object each. Daemon to child: `run` (the script, its limits, the
tool catalog and stored values), then one `settle` per call. Child to daemon: `call` per tool
call and one `done` with the output. It imports only the standard library and the binding, and
is started with `python -I` and an empty environment: no project code, no secrets.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

import quickjs  # type: ignore[import-untyped]  # the binding ships no types

# The script's globals, in JavaScript. `__host_call` and `__host_exit` are Python callables.
PRELUDE = r"""
(() => {
  const g = globalThis;
  const output = [];
  const pending = new Map();
  const storeValues = Object.create(null);
  const storeWrites = { set: Object.create(null), delete: [] };
  let catalog = [];
  const EXIT = { exit: true };
  const OOM = "out of memory (or the script threw null)";
  const show = (v) => {
    if (typeof v === "string") return v;
    if (v instanceof Error) return v.stack ? `${v.name}: ${v.message}\n${v.stack}` : `${v.name}: ${v.message}`;
    try { const s = JSON.stringify(v); return s === undefined ? String(v) : s; } catch { return String(v); }
  };
  const log = (level) => (...args) => {
    const line = args.map((a) => (typeof a === "string" ? a : show(a))).join(" ");
    output.push({ type: "text", text: level === "log" ? line : `[${level}] ${line}`, console: true });
  };
  g.console = { log: log("log"), info: log("info"), warn: log("warn"), error: log("error"), debug: log("debug") };
  g.text = (value) => { output.push({ type: "text", text: show(value) }); };
  g.image = () => { throw new Error("image() is not supported in this sandbox"); };
  g.exit = () => { throw EXIT; };
  // Pi 1.6.0's limits and words: the store persists in the session file, so it stays small. Each
  // key is written once in storeWrites, in `set` or in `delete`, as Pi's entry holds it.
  const VALUE_LIMIT = 262144, TOTAL_LIMIT = 1048576;
  const STORE_HINT = "store() is for small state such as IDs or summaries. Show images with image(), " +
    "keep large data in variables, or write it to a file with a tool.";
  const sizeOf = (key) => (key in storeValues ? key.length + JSON.stringify(storeValues[key]).length : 0);
  const checkKey = (name, key) => {
    if (typeof key !== "string") throw new TypeError(`${name}() key must be a string`);
  };
  g.store = (key, value) => {
    checkKey("store", key);
    const dropped = storeWrites.delete.filter((k) => k !== key);
    if (value === undefined) {
      delete storeValues[key]; delete storeWrites.set[key]; storeWrites.delete = [...dropped, key]; return;
    }
    let json;
    try { json = JSON.stringify(value); } catch (e) {
      throw new TypeError(`store(${JSON.stringify(key)}) value is not JSON-serializable: ${show(e)}`);
    }
    if (json === undefined) throw new TypeError(`store(${JSON.stringify(key)}) value is not JSON-serializable`);
    if (json.length > VALUE_LIMIT) {
      throw new RangeError(`store(${JSON.stringify(key)}) value has ${json.length} characters of JSON, ` +
        `more than the limit of ${VALUE_LIMIT}. ${STORE_HINT}`);
    }
    const others = Object.keys(storeValues).reduce((sum, k) => sum + (k === key ? 0 : sizeOf(k)), 0);
    const total = others + key.length + json.length;
    if (total > TOTAL_LIMIT) {
      throw new RangeError(`store is full: stored values would exceed ${TOTAL_LIMIT} characters of JSON. ` +
        `Delete keys with store(key, undefined). ${STORE_HINT}`);
    }
    storeValues[key] = JSON.parse(json); storeWrites.set[key] = JSON.parse(json); storeWrites.delete = dropped;
  };
  g.load = (key) => {
    checkKey("load", key);
    return key in storeValues ? JSON.parse(JSON.stringify(storeValues[key])) : undefined;
  };
  const call = (name, args) => new Promise((resolve, reject) => {
    const id = __host_call(name, JSON.stringify(args === undefined ? {} : args));
    pending.set(id, { resolve, reject });
  });
  g.tools = new Proxy({}, {
    get: (_, key) => {
      if (typeof key !== "string") return undefined;
      const entry = catalog.find((t) => t.id === key || t.name === key);
      if (!entry) return (args) => Promise.reject(new Error(`Unknown tool: ${key}`));
      return (args) => call(entry.name, args);
    },
  });
  g.describeTool = async (name) => {
    const t = catalog.find((c) => c.id === name || c.name === name);
    return t ? t.sample : undefined;
  };
  g.searchTools = async (query, opts = {}) => {
    if (typeof query !== "string") throw new Error("searchTools() expects a query string");
    const limit = opts.limit ?? 5;
    const words = query.toLowerCase().split(/\W+/).filter(Boolean);
    return catalog
      .map((t) => ({ t, score: words.filter((w) => (t.name + " " + t.sample).toLowerCase().includes(w)).length }))
      .filter((r) => r.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, limit)
      .map((r) => ({ name: r.t.id, description: r.t.sample }));
  };
  g.describeNamespace = async () => undefined;
  g.__settle = (id, ok, json) => {
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    if (ok) p.resolve(JSON.parse(json)); else p.reject(new Error(JSON.parse(json)));
  };
  g.__state = { done: false, ok: false, value: undefined, error: null };
  g.__start = (source, tools, stored) => {
    catalog = tools;
    Object.assign(storeValues, stored);
    g.ALL_TOOLS = tools.map((t) => ({ name: t.id, description: t.sample }));
    let body;
    try {
      body = new Function(`return (async () => {\n${source}\n})();`);
    } catch (e) {
      g.__state = { done: true, ok: false, error: { name: e.name, message: e.message, stack: show(e) } };
      return;
    }
    body().then(
      (value) => { g.__state = { done: true, ok: true, value }; },
      (e) => {
        if (e === EXIT) { g.__state = { done: true, ok: true, value: undefined }; return; }
        // A heap at its cap cannot build the error object, so QuickJS throws null.
        if (e === null) {
          g.__state = { done: true, ok: false, error: { name: "InternalError", message: OOM } };
          return;
        }
        const err = e instanceof Error
          ? { name: e.name, message: e.message, stack: e.stack ? `${e.name}: ${e.message}\n${e.stack}` : undefined }
          : { name: "Error", message: show(e) };
        g.__state = { done: true, ok: false, error: err };
      },
    );
  };
  g.__result = () => {
    const s = g.__state;
    const value = s.value === undefined ? null : (typeof s.value === "string" ? s.value : show(s.value));
    return JSON.stringify({
      op: "done", ok: s.ok, hasValue: s.value !== undefined, value,
      error: s.error, output, storeWrites,
    });
  };
  g.__pendingCount = () => pending.size;
})();
"""


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def failure(message: str, kind: str = "script") -> dict[str, Any]:
    return {
        "op": "done",
        "ok": False,
        "hasValue": False,
        "value": None,
        "error": {"name": "InternalError", "message": message, "kind": kind},
        "output": [],
        "storeWrites": {"set": {}, "delete": []},
    }


def run(request: dict[str, Any]) -> dict[str, Any]:
    context = quickjs.Context()
    context.set_memory_limit(int(request["memoryLimitBytes"]))
    outgoing: list[tuple[int, str, str]] = []

    def host_call(name: str, args: str) -> int:
        outgoing.append((len(outgoing) + 1, name, args))
        return len(outgoing)

    context.add_callable("__host_call", host_call)
    context.eval(PRELUDE)
    start = context.get("__start")
    start(
        request["code"],
        context.parse_json(json.dumps(request["tools"])),
        context.parse_json(json.dumps(request["store"])),
    )
    sent = 0
    while True:
        while context.execute_pending_job():
            pass
        if context.eval("__state.done"):
            return dict(json.loads(context.eval("__result()")))
        for call_id, name, args in outgoing[sent:]:
            send({"op": "call", "id": call_id, "name": name, "args": json.loads(args)})
        sent = len(outgoing)
        if context.eval("__pendingCount()") == 0:
            # Nothing to wait for and not done: a promise that never settles.
            return failure("The script is waiting on a promise that never settles", "script")
        line = sys.stdin.readline()
        if not line:
            raise SystemExit(0)
        settle = json.loads(line)
        context.get("__settle")(settle["id"], settle["ok"], json.dumps(settle["value"]))


def main() -> None:
    request = json.loads(sys.stdin.readline())
    # The binding refuses host calls under its own time limit, so the CPU cap is the kernel's; the
    # daemon's wall-time cap kills the process sooner in the usual case.
    cpu = max(1, int(request["cpuSeconds"]) + 1)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    try:
        result = run(request)
    except quickjs.JSException as exc:
        text = str(exc)
        # An out-of-memory runtime cannot even build its error: the binding reports `null`.
        if text in ("null", "") or "out of memory" in text:
            result = failure("out of memory", "memory")
        elif "interrupted" in text:
            result = failure("CPU time limit reached", "timeout")
        else:
            result = failure(text)
    except MemoryError:
        result = failure("out of memory", "memory")
    except quickjs.StackOverflow as exc:
        result = failure(f"stack overflow: {exc}")
    send(result)


if __name__ == "__main__":
    main()
