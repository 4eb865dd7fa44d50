"""The Responses API's stream as the loopback server writes it, and a model pointed at that server."""

from __future__ import annotations

from typing import Any

import msgspec

from pi_rpc.ai.compat import ModelCompat
from pi_rpc.ai.models import get_model
from pi_rpc.ai.types import (
    Model,
)

from .sse_server import Delay, SSEServer, sse_event


class Wire:
    """Builds one Responses event stream, numbering events as the API does."""

    def __init__(self, response_id: str = "resp_1", model: str = "gpt-5.1-2025-11-13") -> None:
        self.events: list[bytes | Delay] = []
        self.seq = 0
        self.response: dict[str, Any] = {
            "id": response_id,
            "object": "response",
            "model": model,
            "status": "in_progress",
            "output": [],
            "usage": None,
        }
        self.emit("response.created", response=dict(self.response))
        self.emit("response.in_progress", response=dict(self.response))

    def emit(self, kind: str, **fields: Any) -> Wire:
        self.events.append(sse_event({"type": kind, "sequence_number": self.seq, **fields}, kind))
        self.seq += 1
        return self

    def message(self, index: int, chunks: list[str], item_id: str = "msg_1", phase: str | None = None) -> Wire:
        item: dict[str, Any] = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        self.emit("response.output_item.added", output_index=index, item=item)
        part = {"type": "output_text", "text": "", "annotations": []}
        self.emit("response.content_part.added", output_index=index, item_id=item_id, content_index=0, part=part)
        for chunk in chunks:
            self.emit(
                "response.output_text.delta",
                output_index=index,
                item_id=item_id,
                content_index=0,
                delta=chunk,
                logprobs=[],
            )
        text = "".join(chunks)
        self.emit("response.output_text.done", output_index=index, item_id=item_id, content_index=0, text=text)
        done = {**item, "status": "completed", "content": [{**part, "text": text}]}
        if phase:
            done["phase"] = phase
        return self.emit("response.output_item.done", output_index=index, item=done)

    def reasoning(
        self, index: int, parts: list[list[str]], item_id: str = "rs_1", encrypted: str | None = "gAAAAenc"
    ) -> Wire:
        self.emit(
            "response.output_item.added",
            output_index=index,
            item={"id": item_id, "type": "reasoning", "summary": []},
        )
        for n, chunks in enumerate(parts):
            self.emit(
                "response.reasoning_summary_part.added",
                output_index=index,
                item_id=item_id,
                summary_index=n,
                part={"type": "summary_text", "text": ""},
            )
            for chunk in chunks:
                self.emit(
                    "response.reasoning_summary_text.delta",
                    output_index=index,
                    item_id=item_id,
                    summary_index=n,
                    delta=chunk,
                )
            self.emit(
                "response.reasoning_summary_text.done",
                output_index=index,
                item_id=item_id,
                summary_index=n,
                text="".join(chunks),
            )
            self.emit(
                "response.reasoning_summary_part.done",
                output_index=index,
                item_id=item_id,
                summary_index=n,
                part={"type": "summary_text", "text": "".join(chunks)},
            )
        item: dict[str, Any] = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "".join(c)} for c in parts],
        }
        if encrypted is not None:
            item["encrypted_content"] = encrypted
        return self.emit("response.output_item.done", output_index=index, item=item)

    def call(self, index: int, call_id: str, name: str, chunks: list[str], item_id: str = "fc_1") -> Wire:
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": call_id,
            "name": name,
        }
        self.emit("response.output_item.added", output_index=index, item=item)
        for chunk in chunks:
            self.emit("response.function_call_arguments.delta", output_index=index, item_id=item_id, delta=chunk)
        arguments = "".join(chunks)
        self.emit("response.function_call_arguments.done", output_index=index, item_id=item_id, arguments=arguments)
        return self.emit(
            "response.output_item.done",
            output_index=index,
            item={**item, "status": "completed", "arguments": arguments},
        )

    def completed(
        self,
        input_tokens: int = 12,
        output_tokens: int = 5,
        cached: int = 0,
        status: str = "completed",
        incomplete: str | None = None,
    ) -> Wire:
        usage = {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        }
        response = {
            **self.response,
            "status": status,
            "usage": usage,
            "incomplete_details": {"reason": incomplete} if incomplete else None,
        }
        kind = "response.completed" if status == "completed" else f"response.{status}"
        return self.emit(kind, response=response)


def responses_model(server: SSEServer, model_id: str = "gpt-5.1", **kw: Any) -> Model:
    if isinstance(kw.get("compat"), dict):
        kw["compat"] = msgspec.convert(kw["compat"], ModelCompat)
    model = get_model("openai", model_id)
    assert model is not None
    model.base_url = server.url + "/v1"
    for name, value in kw.items():
        setattr(model, name, value)
    return model
