"""A screen's thread worker handing its result back to the app's thread."""

from __future__ import annotations

from typing import Callable

from textual.screen import Screen


def show_on_screen(screen: Screen, show: Callable[..., None], *args) -> None:
    """From a thread worker of `screen`: `show(*args)` on the app's thread, unless the screen closed meanwhile
    (popped, or the app quitting): its widgets are gone then, and there is nothing left to show the result on."""
    def shown() -> None:
        # Attached is not enough: the app shutting down, or popping the screen, removes its widgets first, and
        # `display` turns false on a screen being pruned (a Screen is never styled display: none).
        if screen.app.is_running and screen.is_attached and screen.display:
            show(*args)
    screen.app.call_from_thread(shown)
