"""What the workers share: ``check`` counts the conditions that held and
raises AssertionError, naming the case, at the first that did not."""

from __future__ import annotations

#: Conditions that held so far (each worker prints it on its OK line).
count = 0


def check(cond: bool, what: str) -> None:
    global count
    if not cond:
        raise AssertionError(what)
    count += 1
