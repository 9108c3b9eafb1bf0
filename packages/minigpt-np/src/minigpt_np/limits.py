"""Allowed ranges for numeric settings, checked before any work starts.

A `Range` says what a value may be ("an integer >= 1", "a finite number > 0"), checks a
value against it (ValueError naming the setting and the range), and gives argparse a
`type` that does the same for a command-line string, so a bad flag is one line naming
the flag and the range, before anything runs.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Range:
    kind: type  # int or float
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # low itself is excluded
    high_open: bool = False
    why: str = ""  # appended to the message: the reason for a bound

    def describe(self) -> str:
        noun = "an integer" if self.kind is int else "a finite number"
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            text = f"{noun} in {left}{self.low:g}, {self.high:g}{right}"
        elif self.low is not None:
            text = f"{noun} {'>' if self.low_open else '>='} {self.low:g}"
        elif self.high is not None:
            text = f"{noun} {'<' if self.high_open else '<='} {self.high:g}"
        else:
            text = noun
        return f"{text} ({self.why})" if self.why else text

    def allows(self, value) -> bool:
        if self.kind is int:
            if not isinstance(value, int) or isinstance(value, bool):
                return False
        elif isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def check(self, name: str, value):
        """`value` if allowed, else ValueError: "<name> must be <range>, got <value>"."""
        if not self.allows(value):
            raise ValueError(f"{name} must be {self.describe()}, got {value!r}")
        return value

    def argtype(self):
        """An argparse `type`: the string parsed as `kind` and checked against the range."""

        def parse(text: str):
            try:
                value = self.kind(text)
            except ValueError:
                value = None
            if value is None or not self.allows(value):
                raise argparse.ArgumentTypeError(f"must be {self.describe()}, got {text!r}")
            return value

        parse.__name__ = self.kind.__name__  # argparse names the type in some messages
        return parse


AT_LEAST_1 = Range(int, 1)
AT_LEAST_0 = Range(int, 0)
POSITIVE = Range(float, 0, low_open=True)
NON_NEGATIVE = Range(float, 0)
