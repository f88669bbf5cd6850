"""goal.Error: every failure of goal, with goal's message and code."""

from __future__ import annotations

_NAMES = {
    -1: "ERR_NOT_INITIALIZED",
    -2: "ERR_ALREADY_INITIALIZED",
    -3: "ERR_INVALID_ARGUMENT",
    -4: "ERR_CYCLE",
    -5: "ERR_RANK",
    -6: "ERR_SCRATCHPAD",
    -7: "ERR_BAD_OP",
    -8: "ERR_TRUNCATED",
    -9: "ERR_DIV_BY_ZERO",
    -10: "ERR_PEER_LOST",
    -11: "ERR_BUSY",
    -12: "ERR_NO_MEMORY",
    -13: "ERR_SYSTEM",
    -14: "ERR_UNSUPPORTED",
    -15: "ERR_INTERNAL",
    -16: "ERR_MISMATCH",
    -17: "ERR_PEER_FAILED",
}


class Error(Exception):
    """A goal error.

    ``message`` is goal's sentence naming what went wrong and where (the
    text ``GOAL_LastError()`` gives in C), ``code`` the C API's negative
    ``GOAL_ERR_*`` value (also ``goal.ERR_*``), ``name`` its name
    (``"ERR_PEER_LOST"``).
    """

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message: str = message
        self.code: int = code

    @property
    def name(self) -> str:
        """The code's name, as in ``goal.ERR_*`` (``"ERR_RANK"``)."""
        return _NAMES.get(self.code, f"goal error {self.code}")

    def __str__(self) -> str:
        return f"{self.message} [{self.name}]"
