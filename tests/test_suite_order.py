"""The order the suite hands its tests out in (tests/conftest.py): the tests marked `first` (the wheel's install,
tests/test_wheel_install.py) ahead of every other."""

from __future__ import annotations


def test_the_tests_marked_first_lead(request):
    marked = [i.get_closest_marker("first") is not None for i in request.session.items]
    assert marked == sorted(marked, reverse=True)
