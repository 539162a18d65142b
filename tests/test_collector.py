"""What a harness process imports once is frozen out of the collector's passes (tutor.harness.collector)."""

from __future__ import annotations

import gc

from tutor.harness.collector import imports_kept


def test_what_is_made_inside_is_frozen_and_no_pass_runs_meanwhile():
    before = gc.get_freeze_count()
    passes = gc.get_stats()
    with imports_kept():
        assert not gc.isenabled()
        made = [[] for _ in range(20_000)]  # enough to start a pass thrice over, were the collector on
        assert gc.get_stats() == passes
    assert gc.isenabled() and gc.get_freeze_count() >= before + len(made)
    assert not any(o is made for o in gc.get_objects())  # no pass walks it now


def test_a_collector_turned_off_before_stays_off():
    gc.disable()
    try:
        with imports_kept():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
