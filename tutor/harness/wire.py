"""Messages between the grade's coordinator and its workers: dicts of plain values and CPU tensors.

Encoded with torch.save and read back with `weights_only=True`, which builds tensors and
containers and never runs code: a reply forged by learner code can lie about its own
numbers, but cannot take over the process that reads it. A message of plain values alone (most
of a grade's: an operation asked, the times of its calls) goes as JSON, which gives it back as it
was and whose reader builds nothing else: 0.01 ms where torch's way takes 0.3-0.4 ms. It is written
by CPython's C encoder, taken before any learner code loads: no Python function learner code could
replace (json.encoder's JSONEncoder, say) writes the numbers a worker reports.

A message carrying more than SPILL_BYTES of tensors (a kernel puzzle's 128-256 MB output, twice a round) goes
through a file in shared memory instead of the pipe, whose 64 KB writes, and the copies in and out of a buffer,
cost about 1 s for 256 MB where the file costs a quarter of that (benchmarks/wire_cost.py).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from _json import encode_basestring_ascii, make_encoder
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from tutor.harness.shards import tensor_bytes

SPILL_BYTES = 16 * 2**20
SPILL_PREFIX = "infprof-wire-"
SPILL = "spilled to"  # the one key of a message whose body is in a file
# A serving replay's steps are timed by the coordinator, each a round trip through the pipe
# (tutor.harness.serving_rounds), and puzzle18's tiers were set on the H100 with torch's encoding in that time
# (challenges/puzzle18/MEASUREMENTS.md): its operations, asked and answered, keep it until they are set again.
REPLAY_OPS = frozenset({"submit", "step"})
MAX_PLAIN_DEPTH = 32  # deeper, a message goes torch's way: a reader's recursion never runs out on ours


def _unplain(value):
    raise TypeError(f"{type(value).__name__} is not a plain value")  # never reached: plain() is asked first


# json.dumps(message, separators=(",", ":")) in C alone: no circular check (a plain message has none), NaN allowed.
_ENCODE = make_encoder(None, _unplain, encode_basestring_ascii, None, ":", ",", False, False, True)


def spill_dir() -> Path:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


def send(conn: Connection, message: dict, op: str | None = None) -> None:
    """`message` (asking operation `op`, or answering it) down the pipe: as JSON where it is plain and `op` is not
    one of REPLAY_OPS, else torch's way (through a file where it carries more than SPILL_BYTES of tensors)."""
    if op not in REPLAY_OPS and plain(message):  # no tensor in it: nothing to spill, no second walk to find out
        conn.send_bytes("".join(_ENCODE(message, 0)).encode())
        return
    size = tensor_bytes(message)
    if size > SPILL_BYTES:
        folder = spill_dir()
        if _room(folder) > 2 * size:  # a container's /dev/shm may be 64 MB
            message = _spilled(message, folder)
    buffer = io.BytesIO()
    torch.save(message, buffer)
    conn.send_bytes(buffer.getvalue())


def plain(value, depth: int = 0) -> bool:
    """Whether JSON gives `value` back as it is: dicts of str keys, lists, str, int, float, bool and None, of
    exactly those types (a tuple would come back a list, a subclass as its base), and not nested too deep to read."""
    kind = type(value)
    if kind in (str, int, float, bool, type(None)):
        return True
    if depth > MAX_PLAIN_DEPTH:
        return False
    if kind is list:
        return all(plain(v, depth + 1) for v in value)
    return kind is dict and all(type(k) is str and plain(v, depth + 1) for k, v in value.items())


def _room(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def _spilled(message: dict, folder: Path) -> dict:
    """The message written to a file of the spill folder, and the message naming it that the pipe carries instead
    (the reader removes the file once read); the message itself where the folder has no room for it."""
    fd, path = tempfile.mkstemp(prefix=SPILL_PREFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as file:
            torch.save(message, file)
    except OSError:  # shared memory full: the pipe is slower, not wrong
        os.unlink(path)
        return message
    except BaseException:
        os.unlink(path)
        raise
    return {SPILL: os.path.basename(path)}


def recv(conn: Connection) -> dict:
    data = conn.recv_bytes()
    if data[:1] == b"{":  # torch.save's zip archive begins b"PK"
        try:
            message = json.loads(data)
        except RecursionError as e:  # a forged message nested past what the reader can follow
            raise ValueError("a worker sent a message nested too deep to read") from e
    else:
        message = torch.load(io.BytesIO(data), weights_only=True)
    if isinstance(message, dict) and set(message) == {SPILL}:
        message = _unspilled(message[SPILL])
    if not isinstance(message, dict):
        raise ValueError(f"a worker sent {type(message).__name__}, not a message")
    return message


def _unspilled(name) -> dict:
    """A spilled message's body, read from the file it names and the file removed. Only a file of the spill
    folder that a sender made is read: a forged name cannot point the reader at another file."""
    if not (isinstance(name, str) and name.startswith(SPILL_PREFIX) and os.path.basename(name) == name):
        raise ValueError(f"a worker named {name!r} as its message's file")
    path = spill_dir() / name
    try:
        # mmap: the tensors are read from shared memory where they lie, no copy; the mapping outlives the name.
        return torch.load(path, weights_only=True, mmap=True)
    finally:
        path.unlink(missing_ok=True)


def portable(out) -> dict:
    """A workload's output as the coordinator compares it: a plain tensor copied to the host, or what it is instead.

    Copied as forward() returns: work a side thread finishes later is not in it. A tensor
    subclass is never touched: it could run code of its own when read.
    """
    if type(out) is torch.Tensor:
        return {"tensor": out.detach().to("cpu", copy=True), "cuda": out.is_cuda, "strides": strides(out)}
    what = "a tensor subclass, not a plain torch.Tensor" if isinstance(out, torch.Tensor) else "not a tensor"
    return {"problem": f"forward() returned {type(out).__name__}, {what}"}


def strides(out: torch.Tensor) -> tuple[int, ...] | None:
    """An output's strides where it is not contiguous (tutor.harness.checks names it a strided view), else None."""
    return None if out.is_contiguous() else tuple(out.stride())
