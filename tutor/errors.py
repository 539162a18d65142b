"""Errors a learner can cause or meet: each says what happened and what to do next."""

from __future__ import annotations


class TutorError(Exception):
    """A problem to show as a short message, never as a traceback."""

    def __init__(self, message: str, advice: str = "", output_tail: str = ""):
        super().__init__(message)
        self.message = message
        self.advice = advice
        self.output_tail = output_tail

    def __str__(self) -> str:
        return f"{self.message}\n{self.advice}" if self.advice else self.message


class EnvironmentProblem(TutorError):
    """The machine cannot run this (no GPU, missing profiler or package): exit code 2."""
