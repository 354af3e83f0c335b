"""The protocol a run follows, decided once: the benchmark's official one or memevals' own.

`protocol=official` (the default) sends what the benchmark's published code sends, with its
prompts read at run time from the pinned upstream files; `protocol=memevals` sends memevals'
own prompts and settings. A task resolves the option once (`resolve`) into a `Protocol` and
passes the object on: the benchmark folders branch on `protocol.official` and read its
settings; no other module compares a string with a protocol name. Logs keep the name
(`str(protocol)`), so a log reads the same as before the object existed. This module names no
benchmark and imports no framework.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

__all__ = [
    "BEFORE_OPTION",
    "DEFAULT",
    "MEMEVALS",
    "NAMES",
    "OFFICIAL",
    "PROTOCOLS",
    "Protocol",
    "ProtocolError",
    "resolve",
]


class ProtocolError(ValueError):
    """A protocol value that is not one of the protocols, or an option the protocol refuses."""


@dataclass(frozen=True)
class Protocol:
    """One protocol: its name and the settings every benchmark takes from it."""

    #: the option's value and the name logs keep ("official" or "memevals")
    name: str
    #: True: the benchmark's published prompts, settings and judge (its pinned upstream code)
    official: bool
    #: the reader's temperature: 0 as the official scripts send it; None leaves it to the run
    temperature: float | None
    #: True: each reply is judged once, as the official judge does (`judge_runs` refused)
    judges_once: bool

    def __str__(self) -> str:
        return self.name

    def fix(self, *, lm_eval: bool = True) -> str:
        """How a user asks for this protocol, for the end of a message refusing an option
        under the other one.

        Args:
            lm_eval: also name lm-eval's spelling (false for a message only Inspect shows).

        Returns:
            E.g. `add -T protocol=memevals (lm-eval: --metadata '{"protocol": "memevals"}')`.
        """
        if self is DEFAULT:
            text = f"use -T protocol={self.name} (the default: leave protocol out)"
        else:
            text = f"add -T protocol={self.name}"
        if lm_eval:
            text += f" (lm-eval: --metadata '{{\"protocol\": \"{self.name}\"}}')"
        return text

    def check_judge_runs(self, judge_runs: int, *, lm_eval: bool = False) -> None:
        """Refuse repeated judging under a protocol that judges once.

        Args:
            judge_runs: how many times each reply would be judged.
            lm_eval: also name lm-eval's spelling of the fix.
        """
        if self.judges_once and judge_runs != 1:
            raise ProtocolError(
                f"judge_runs: protocol={self.name} judges once with the official judge; "
                f"repeated judging applies to protocol=memevals: {MEMEVALS.fix(lm_eval=lm_eval)}"
            )


OFFICIAL = Protocol(name="official", official=True, temperature=0.0, judges_once=True)
MEMEVALS = Protocol(name="memevals", official=False, temperature=None, judges_once=False)

#: Every protocol, the default first.
PROTOCOLS: tuple[Protocol, ...] = (OFFICIAL, MEMEVALS)
#: Their names, as the option takes them.
NAMES: tuple[str, ...] = tuple(p.name for p in PROTOCOLS)
#: The protocol of a run that does not name one.
DEFAULT = OFFICIAL
#: What a log written before the option existed was built with (memevals' own prompts).
BEFORE_OPTION = MEMEVALS


def resolve(value: object) -> Protocol:
    """The protocol a `protocol` option value names: the one check of the option.

    Args:
        value: a Protocol, or its name as given to `-T protocol=` / `--metadata`.

    Returns:
        The Protocol.

    Raises:
        ProtocolError: naming the allowed values and the closest one.
    """
    if isinstance(value, Protocol):
        return value
    for protocol in PROTOCOLS:
        if value == protocol.name:
            return protocol
    close = difflib.get_close_matches(str(value), NAMES, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ProtocolError(
        f"protocol={value!r} is not supported{hint}; allowed values: {', '.join(NAMES)}"
    )
