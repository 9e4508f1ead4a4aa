"""One idiom for every name -> thing table (datasets, methods, losses, center generators, backbones,
presets, report notebooks), after timm's registries.

>>> from shc.registry import Registry
>>> colours = Registry("colour")
>>> @colours.register("red")
... def red():
...     return "#f00"
>>> colours.get("red")()
'#f00'
>>> colours.get("rde")
Traceback (most recent call last):
...
ValueError: unknown colour 'rde'; did you mean 'red'? Known colours: red.

Names keep their registration order (the order users see in listings and in ``--help``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

__all__ = ["Registry", "did_you_mean"]


def did_you_mean(name: str, known: list[str]) -> str:
    """`` did you mean 'x'?`` for the known names closest to ``name``, letter case ignored (``SHC`` finds ``shc``,
    ``mAP@all`` finds ``mAP@ALL``); empty when none is close."""
    lowered = {candidate.lower(): candidate for candidate in known}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.6)
    return f" did you mean {' or '.join(repr(lowered[c]) for c in close)}?" if close else ""


class Registry(Generic[T]):
    """An ordered, append-only table ``name -> entry`` with helpful errors.

    Parameters
    ----------
    kind : str
        What the entries are, singular ("dataset", "center method"): used in error messages.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.plural = kind + ("es" if kind.endswith("s") else "s")
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T | None = None) -> Callable[[T], T] | T:
        """Add ``entry`` under ``name``; without ``entry``, return a decorator that adds the decorated object.

        Registering a second, different entry under a taken name is refused (a typo would otherwise
        silently replace a method); registering the same object again is a no-op.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.kind} name must be a non-empty string, got {name!r}.")

        def add(value: T) -> T:
            if name in self._entries and self._entries[name] is not value:
                raise ValueError(f"a {self.kind} named {name!r} is already registered; pick another name.")
            self._entries[name] = value
            return value

        return add if entry is None else add(entry)

    def get(self, name: str) -> T:
        """The entry of ``name``; an unknown name raises a ValueError with the closest names and all known ones."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            pass
        hint = did_you_mean(str(name), list(self._entries))
        raise ValueError(f"unknown {self.kind} {name!r}{';' + hint if hint else '.'} Known {self.plural}: "
                         f"{', '.join(self._entries)}.")

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
