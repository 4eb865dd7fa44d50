"""The checkpoint store writes its index only when that changes its file, and looks at its disk
limit only when a new blob or checkpoint could make it drop something (session/checkpoints/store.py)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from pi_rpc.session.checkpoints.store import CheckpointIndex, CheckpointStore, FileState, PreImage


def test_a_save_that_would_change_nothing_is_skipped_and_one_that_would_is_not(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "cp")
    assert store.unsaved() is not None  # no file yet
    store.checkpoint("e1")
    store.save(store.unsaved())
    index = tmp_path / "cp" / "index.json"
    assert msgspec.json.decode(index.read_bytes(), type=CheckpointIndex).checkpoints[0].entry_id == "e1"
    assert store.unsaved() is None

    store.checkpoint("e1")  # the same user message: nothing new
    assert store.unsaved() is None
    store.checkpoint("e2")
    assert store.unsaved() is not None

    store.save()
    index.unlink()  # the file went: saving writes it again
    assert store.unsaved() is not None


def test_a_store_read_back_saves_nothing_until_its_index_changes(tmp_path: Path) -> None:
    first = CheckpointStore(tmp_path / "cp")
    first.checkpoint("e1")
    first.save()
    again = CheckpointStore(tmp_path / "cp")
    assert again.unsaved() is None
    again.index.agent_states["/w/a.txt"] = FileState("0" * 64)
    assert again.unsaved() is not None


def test_the_limit_is_looked_at_after_a_new_blob_or_checkpoint_and_then_enforced_as_before(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "cp", max_bytes=10)
    assert store.limit_unchecked  # a store read back may be past it already
    store.checkpoint("e1").files["/w/a"] = _pre_image(store, b"0123456789abc")
    assert store.enforce_limit() == []  # one checkpoint alone is kept whole
    assert not store.limit_unchecked
    store.put_blob(b"0123456789abc")  # the same bytes: no new blob
    assert not store.limit_unchecked

    store.checkpoint("e2")  # now the oldest may go
    assert store.limit_unchecked
    assert store.enforce_limit() == ["e1"]
    assert not store.limit_unchecked
    store.put_blob(b"new bytes, a new blob")
    assert store.limit_unchecked


def _pre_image(store: CheckpointStore, data: bytes) -> PreImage:
    return PreImage(kind="file", blob=store.put_blob(data))


def test_under_the_limit_a_new_checkpoint_needs_no_look_and_a_blob_that_passes_it_does(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "cp", max_bytes=20)
    store.checkpoint("e1").files["/w/a"] = _pre_image(store, b"0123456789")
    assert store.enforce_limit() == []
    store.checkpoint("e2")  # 10 bytes of 20: nothing could go
    assert not store.limit_unchecked
    store.checkpoint("e2").files["/w/b"] = _pre_image(store, b"9876543210+")  # 21 bytes now
    assert store.limit_unchecked
    assert store.enforce_limit() == ["e1"]
    assert store.blobs_size() == 11
