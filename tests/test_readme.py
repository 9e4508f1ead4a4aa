"""The README's numbers are the output of the commands it names (issue 38): its headline table is rebuilt here from
the committed results files by the very commands of its headline block."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _headline_commands(readme: str) -> list[list[str]]:
    """The ``python -m shc.results`` commands of the code block that follows the headline paragraph."""
    block = readme.split("**The headline:", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = [shlex.split(line.split("#", 1)[0]) for line in joined.splitlines() if line.startswith("python -m shc.results")]
    return [command[3:] for command in commands]  # the arguments after `python -m shc.results`


def test_the_readme_headline_rows_are_what_its_commands_print(capsys):
    from shc.results import main

    readme = (ROOT / "README.md").read_text()
    commands = _headline_commands(readme)
    assert len(commands) == 2 and all("--headline" in argv and "--from-csv" in argv for argv in commands)
    table = readme.split("| bits | shc | shc-ls | crh | best baseline |", 1)[1].split("\n\n", 1)[0]
    shown = [line for line in table.splitlines() if re.match(r"\| \d+ \|", line)]
    printed, sentences = [], []
    for argv in commands:
        assert main(argv) == 0
        out = capsys.readouterr().out.splitlines()
        printed += [line for line in out if re.match(r"\| \d+ \|", line)]
        sentences += [line for line in out if line.startswith("- At ")]
    assert shown == printed  # every row, in order: none typed, none stale
    # the computed verdict sentences below the table, verbatim and in order
    assert len(sentences) == len(commands) and "\n".join(sentences) in readme
