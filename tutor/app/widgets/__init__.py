"""Widgets of the TUI: they display what they are given and post messages upward; no grading here."""
