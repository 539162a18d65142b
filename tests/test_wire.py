"""The harness's messages: a message of plain values goes as JSON, any other torch's way, each back as it was sent; a
large output travels through a file in shared memory, read once and removed; a forged message cannot make the reader
open any other file or run any code."""

from __future__ import annotations

import functools
import io
import json
import math
import os
import multiprocessing as mp
import threading
from unittest import mock

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


def sent_and_read(pipe, message) -> tuple[bytes, dict]:
    """What `message` is on the pipe, and what the reader makes of it."""
    ours, theirs = pipe
    wire.send(theirs, message)
    data = ours.recv_bytes()
    theirs.send_bytes(data)
    return data, wire.recv(ours)


def test_plain_values_go_as_json_and_come_back_as_they_were(pipe):
    message = {"op": "time", "seeds": [3, -1, 2**62], "ms": [0.1, -0.0, 1e-300, math.inf], "ok": True, "n": None,
               "name": "mine é \ud800", "nested": {"a": [{"b": []}]}}
    data, got = sent_and_read(pipe, message)
    assert data.startswith(b"{") and json.loads(data) is not None
    assert got == message and [type(v) for v in got["ms"]] == [float] * 4 and str(got["ms"][1]) == "-0.0"
    data, got = sent_and_read(pipe, {"ms": [math.nan]})
    assert data.startswith(b"{") and math.isnan(got["ms"][0])


@pytest.mark.parametrize("message", [{"strides": (4, 1)}, {"by_seed": {3: 1.0}}, {"out": torch.ones(2)},
                                     {"deep": functools.reduce(lambda a, _: [a], range(40), [])}])
def test_anything_json_would_not_give_back_as_it_was_goes_torchs_way(pipe, message):
    """A tuple (JSON's comes back a list), a key that is not a string, a tensor, a message nested deeper than
    MAX_PLAIN_DEPTH."""
    data, got = sent_and_read(pipe, message)
    assert data.startswith(b"PK")
    [(key, value)] = message.items()
    assert type(got[key]) is type(value)
    assert torch.equal(got[key], value) if isinstance(value, torch.Tensor) else got[key] == value


def test_a_subclass_of_a_plain_type_is_not_sent_as_its_base():
    assert not wire.plain({"flag": type("Flag", (int,), {})(1)}) and not wire.plain([type("S", (str,), {})("x")])


def test_the_numbers_a_worker_reports_are_written_by_no_function_learner_code_could_replace(pipe, monkeypatch):
    """json.dumps and the encoder class behind it, replaced in the worker's process as learner code could: what
    goes on the pipe is the message as it was."""
    monkeypatch.setattr(json, "dumps", lambda *a, **k: '{"ms": [0.001]}')
    monkeypatch.setattr(json.JSONEncoder, "encode", lambda self, o: '{"ms": [0.001]}')
    monkeypatch.setattr(json.JSONEncoder, "iterencode", lambda self, o, _one_shot=False: iter(['{"ms": [0.001]}']))
    assert sent_and_read(pipe, {"ms": [12.5]})[1] == {"ms": [12.5]}


@pytest.mark.parametrize("data", [b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}", b'{"a": 1', b"{}x",
                                  b'{"n": ' + b"9" * 5000 + b"}"])
def test_a_forged_json_message_is_refused(pipe, data):
    """Nested past what the reader can follow, cut short, trailing bytes, an int too long to read."""
    ours, theirs = pipe
    theirs.send_bytes(data)
    with pytest.raises(ValueError):
        wire.recv(ours)


def test_a_forged_json_message_naming_a_file_not_spilled_by_a_sender_is_refused_unread(pipe):
    ours, theirs = pipe
    theirs.send_bytes(json.dumps({wire.SPILL: "../../etc/passwd"}).encode())
    with pytest.raises(ValueError, match="as its message's file"):
        wire.recv(ours)


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


@pytest.mark.parametrize("op, as_json", [("step", False), ("submit", False), ("time", True), ("open_server", True)])
def test_a_serving_replays_steps_keep_torchs_encoding_both_ways(op, as_json):
    """The round trips a serving replay's clock holds (wire.REPLAY_OPS) go as puzzle18's tiers were set with; every
    other operation, asked and answered, as JSON."""
    from tutor.harness.lockstep import Side
    from tutor.harness.worker import serve

    ours, theirs = mp.Pipe()
    asked = []

    class Recording:
        def recv_bytes(self):
            data = theirs.recv_bytes()
            asked.append(data)
            return data

        def send_bytes(self, data):
            asked.append(data)
            theirs.send_bytes(data)

        def poll(self, timeout=0.0):
            return theirs.poll(timeout)

    side = Side("ruler", os.getpid(), ours, ["baseline"])
    worker = threading.Thread(target=serve, args=(Recording(), {}, ["baseline"], None))
    with mock.patch("tutor.harness.worker.answer", lambda worker, message: {}), \
            mock.patch("tutor.harness.worker.Worker", lambda *args: object()):
        worker.start()
        side.ask(op, name="baseline")
        ours.close()
        worker.join(10)
    assert [data.startswith(b"{") for data in asked] == [as_json, as_json]
