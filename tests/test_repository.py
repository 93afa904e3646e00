"""The repository is self-contained: no file cites a path outside it.

Papers are cited by authors, title, venue, year and equation/table number; notes and paths on a
development machine (absolute paths, sibling folders of the checkout) are not part of the
repository, so a user who clones it could not follow them.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What a reference to something outside the repository looks like: an absolute home or
#: workspace path, the team's notes folder beside the checkout, a notes file or the design note.
#: Built from pieces so that this file does not itself hold such a reference.
_WORKSPACE, _NOTES, _SUMMARY, _DESIGN = "work", "shared", "summary" + "-seed", "DESIGN" + r"\.md"
OUTSIDE = re.compile(rf"/{_WORKSPACE}/|/home/|/Users/|\.\./{_NOTES}|{_NOTES}/(papers|references)"
                     rf"|{_SUMMARY}-\d+|{_DESIGN}")


def tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.decode().split("\0") if p]


def test_no_file_cites_a_path_outside_the_repository():
    me = Path(__file__).resolve()
    hits = []
    for path in tracked_files():
        if path.resolve() == me or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # binary
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}")
    assert not hits, "references outside the repository:\n" + "\n".join(hits)


def test_the_pattern_catches_what_it_should():
    for bad in (f"see /{_WORKSPACE}/{_NOTES}/papers/x.txt", f"{'summary' + '-seed'}-001.md §4",
                f"../{_NOTES}/references/a.md", f"({'DESIGN' + '.md'}, layout)"):
        assert OUTSIDE.search(bad), bad
    assert not OUTSIDE.search("Yuan & Ma, Federated Accelerated SGD, NeurIPS 2020, eq. (3.1)")
