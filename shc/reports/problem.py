"""What the report checkers return: one :class:`Problem` a defect (:mod:`shc.reports.check` for report folders,
:mod:`shc.reports.check_markdown` for Markdown documents)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Problem"]


@dataclass(frozen=True)
class Problem:
    """One defect: the file (relative to the checked folder, or the document as named), its kind and what was
    found."""

    file: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.file}: {self.kind}: {self.detail}"
