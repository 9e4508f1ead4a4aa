"""The README's numbers are the output of the commands it names (issue 38): its headline table is rebuilt here from
the committed results files by the very commands of its headline block."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _headline_commands(readme: str, marker: str = "**The headline:") -> list[list[str]]:
    """The ``python -m shc.results`` commands of the code block that follows ``marker``."""
    block = readme.split(marker, 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = [shlex.split(line.split("#", 1)[0]) for line in joined.splitlines() if line.startswith("python -m shc.results")]
    return [command[3:] for command in commands]  # the arguments after `python -m shc.results`


def test_the_readme_is_a_front_page():
    """Issue 38: at most 250 lines, and set-up, tests, main job and the headline come before the long tables."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250, "README.md grew past 250 lines: move detail to docs/ and link it"
    positions = [readme.index(heading) for heading in ("## Set-up", "## Tests", "## Main job", "**The headline:")]
    assert positions == sorted(positions)
    headline_line = readme[:positions[-1]].count("\n") + 1
    assert headline_line <= 80, (f"the headline starts on line {headline_line}: a newcomer should meet it within the "
                                 "first screenful; move detail above it to docs/ (docs/presets.md holds the presets)")


def test_the_readme_headline_rows_are_what_its_commands_print(capsys):
    from shc.results import main

    readme = (ROOT / "README.md").read_text()
    commands = _headline_commands(readme)
    assert len(commands) == 3 and all("--headline" in argv and "--from-csv" in argv for argv in commands)
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


def test_the_readme_held_out_class_quotes_are_what_their_commands_print(capsys):
    """Both regimes of the unseen-class protocol (from scratch, pretrained) are quoted, two lines each, and every
    quoted line is one their commands print."""
    from shc.results import main

    readme = (ROOT / "README.md").read_text()
    marker = "**Classes never seen in training"
    commands = _headline_commands(readme, marker)
    assert [argv[argv.index("--preset") + 1] for argv in commands] == ["standard-unseen", "standard-pretrained-unseen"]
    assert all("--from-csv" in argv for argv in commands)
    section = readme.split(marker, 1)[1].split("\n\n**", 1)[0]
    listed = section.split("(verbatim):\n\n", 1)[1].split("\n\n", 1)[0]  # the list after the introducer
    quoted = [line[2:] for line in listed.splitlines() if line.startswith("- ")]
    assert len(quoted) == 2 * len(commands)
    printed = []
    for argv in commands:
        assert main(argv) == 0
        printed.append([line[2:] for line in capsys.readouterr().out.splitlines() if line.startswith("- ")])
    # in order: the first two lines from the first command, the next two from the second
    for number, line in enumerate(quoted):
        assert line in printed[number // 2], line
