"""The harness's messages: a large output travels through a file in shared memory, read once and removed; a
forged message cannot make the reader open any other file."""

from __future__ import annotations

import io
import os
import multiprocessing as mp

import pytest
import torch

from tutor.harness import wire

REAL_SAVE = torch.save


@pytest.fixture
def pipe(tmp_path, monkeypatch):
    """Two ends of a pipe, and a spill folder of this test's own (no other test's files in it)."""
    monkeypatch.setattr(wire, "spill_dir", lambda: tmp_path)
    ours, theirs = mp.Pipe()
    yield ours, theirs
    ours.close()
    theirs.close()


def spilled_files() -> set[str]:
    return {p.name for p in wire.spill_dir().iterdir()}


def test_the_spill_folder_is_shared_memory_where_there_is_one():
    assert str(wire.spill_dir()) == "/dev/shm" or not os.path.isdir("/dev/shm")


def test_a_small_message_goes_through_the_pipe_and_a_large_one_through_a_file_removed_once_read(pipe, monkeypatch):
    ours, theirs = pipe
    monkeypatch.setattr(wire, "SPILL_BYTES", 4096)
    before = spilled_files()
    assert not before
    small, large = torch.arange(16.0), torch.randn(64, 64)  # 64 bytes; 16 KB
    wire.send(theirs, {"out": {"tensor": small}})
    assert spilled_files() == before
    assert torch.equal(wire.recv(ours)["out"]["tensor"], small)
    wire.send(theirs, {"out": [{"tensor": large, "cuda": False}], "n": 3})
    [name] = spilled_files() - before
    got = wire.recv(ours)
    assert spilled_files() == before, name
    assert got["n"] == 3 and torch.equal(got["out"][0]["tensor"], large) and got["out"][0]["cuda"] is False


def test_a_spill_folder_without_room_sends_through_the_pipe_and_leaves_nothing(pipe, monkeypatch):
    ours, theirs = pipe
    monkeypatch.setattr(wire, "SPILL_BYTES", 0)

    def save_to_memory_only(obj, f, *args, **kwargs):
        if not isinstance(f, io.BytesIO):
            raise OSError(28, "No space left on device")
        return REAL_SAVE(obj, f, *args, **kwargs)

    monkeypatch.setattr(wire.torch, "save", save_to_memory_only)
    wire.send(theirs, {"out": torch.ones(8)})
    assert not spilled_files()
    assert torch.equal(wire.recv(ours)["out"], torch.ones(8))


def test_a_spill_folder_too_small_for_the_message_is_not_tried(pipe, monkeypatch):
    ours, theirs = pipe
    monkeypatch.setattr(wire, "SPILL_BYTES", 0)
    monkeypatch.setattr(wire, "_room", lambda folder: 64)  # bytes free: less than twice the 32 the message holds
    wire.send(theirs, {"out": torch.ones(8)})
    assert not spilled_files()
    assert torch.equal(wire.recv(ours)["out"], torch.ones(8))


@pytest.mark.parametrize("name", ["../../etc/passwd", "/etc/hostname", "elsewhere.pt", f"{wire.SPILL_PREFIX}x/../y", 7])
def test_a_message_naming_a_file_not_spilled_by_a_sender_is_refused_unread(pipe, name):
    ours, theirs = pipe
    buffer = io.BytesIO()
    torch.save({wire.SPILL: name}, buffer)
    theirs.send_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="as its message's file"):
        wire.recv(ours)


def test_a_spilled_message_is_still_loaded_without_running_code(pipe, monkeypatch):
    """The file is read as the pipe is, with weights_only: a pickle that would run code is refused, and the file
    removed all the same."""
    ours, theirs = pipe
    monkeypatch.setattr(wire, "SPILL_BYTES", 0)

    class Runs:
        def __reduce__(self):
            return (print, ("ran",))

    before = spilled_files()
    wire.send(theirs, {"out": Runs(), "pad": torch.zeros(4)})
    assert len(spilled_files() - before) == 1
    with pytest.raises(Exception, match="Weights only load failed|Unsupported global"):
        wire.recv(ours)
    assert spilled_files() == before  # removed all the same


LARGE = """
import torch
def prepare(weights, device):
    return weights
def forward(state, x):
    return (x * state["w"]).repeat(1_100_000) * SCALE  # 4.4M floats, 17.6 MB: over SPILL_BYTES
"""


def test_a_runs_large_outputs_travel_through_shared_memory_whole_and_leave_nothing_there(make_request, tmp_path):
    """A harness run whose outputs are spilled (17.6 MB each, over SPILL_BYTES): a candidate off by a factor of 2
    everywhere reads a relative error of exactly 1 in every check, so every value arrived as sent; and no spilled
    file outlives the run."""
    from tutor.runner import run_harness

    before = set(wire.spill_dir().glob(f"{wire.SPILL_PREFIX}*"))
    request = make_request(baseline=LARGE.replace("SCALE", "1"), mine=LARGE.replace("SCALE", "2"))
    result = run_harness({**request, "timing": {"warmup": 1, "rounds": 1}}, tmp_path / "run", 120).result
    checks = result["checks"] + result["timed_checks"]
    assert len(checks) >= 4 and all(c["rel_l2"] == 1.0 for c in checks), checks
    assert set(wire.spill_dir().glob(f"{wire.SPILL_PREFIX}*")) <= before
