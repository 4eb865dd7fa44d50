"""The system prompt a Pi session file records."""

from __future__ import annotations

# One prompt, as Pi writes a message entry: a session is listed once it holds one.
PI_PROMPT = (
    '{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
    '"message":{"role":"user","content":"hi","timestamp":1}}\n'
)
