"""Messages between the grade's coordinator and its workers: dicts of plain values and CPU tensors.

Encoded with torch.save and read back with `weights_only=True`, which builds tensors and
containers and never runs code: a reply forged by learner code can lie about its own
numbers, but cannot take over the process that reads it.
"""

from __future__ import annotations

import io
from multiprocessing.connection import Connection

import torch


def send(conn: Connection, message: dict) -> None:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    conn.send_bytes(buffer.getvalue())


def recv(conn: Connection) -> dict:
    message = torch.load(io.BytesIO(conn.recv_bytes()), weights_only=True)
    if not isinstance(message, dict):
        raise ValueError(f"a worker sent {type(message).__name__}, not a message")
    return message


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
