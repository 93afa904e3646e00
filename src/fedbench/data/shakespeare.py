"""Shakespeare, LEAF style: each speaking role in each play is a client; next-character prediction.

Source: the complete works as plain text, Project Gutenberg eBook #100 (``pg100.txt``), the text
LEAF (Caldas et al. 2018, ``data/shakespeare/preprocess/preprocess_shakespeare.py`` and
``shake_utils.py``) and FedAvg (McMahan et al. 2017) split by play and character.

Parsing (:func:`parse_plays`) handles both layouts Gutenberg has used for eBook #100 (tested on
excerpts of each in ``tests/data/gutenberg.py``):

* ``modern``: the current pg100.txt (the re-release generated from HTML, "Most recently updated"
  2022 onwards; header ``*** START OF THE PROJECT GUTENBERG EBOOK THE COMPLETE WORKS OF WILLIAM
  SHAKESPEARE ***``). A speaker's name alone on a line in capitals ending with a period
  (``FIRST CITIZEN.``, ``SIR TOBY.``), the speech on the following lines, unindented; a verse
  half-line completing a shared line, or a song, is indented several spaces and is speech too. A
  name followed by text on the same line (``HAMLET. To be...``) is accepted as well.
* ``leaf1994`` (the 1994 World Library text LEAF was written for, ``*** START OF THIS PROJECT
  GUTENBERG EBOOK COMPLETE WORKS--WILLIAM SHAKESPEARE ***``): ``  Name. text`` indented two spaces
  (``  Ber.``, ``  COUNTESS.``), the speech continued on lines indented four (LEAF's
  ``CHARACTER_RE`` / ``CONT_RE``); THE COMEDY OF ERRORS is not indented there, and, as LEAF's
  ``COE_CHARACTER_RE`` / ``COE_CONT_RE`` do, its speeches are read unindented and end at a ``<<``
  copyright notice. Departures from LEAF there: its Enter/Exit lines are not taken as speech, and
  the line under an act/scene heading (the place, ``Ephesus. The DUKE'S palace``) is not read as a
  speaker "EPHESUS".

``layout="auto"`` picks the one whose speaker pattern matches more lines. Everything else:

* Gutenberg header/footer: text before ``*** START OF`` and after ``*** END OF`` (the licence) is
  dropped.
* Works: the current edition opens with a ``Contents`` list of every work (THE SONNETS, the plays,
  A LOVER'S COMPLAINT, ..., VENUS AND ADONIS); each listed title's first occurrence after the list
  starts a work. Also (both editions, and files without such a list) a line in capitals (no period
  at the end, not a heading) whose next non-blank line is ``Contents``, ``by William
  Shakespeare``, ``Dramatis Personae``/``PERSONS REPRESENTED``, or (after at least two blank lines)
  an act/scene/prologue/induction heading starts one.
* Only plays: a work without any act/scene/prologue heading (the Sonnets, the poems) is skipped,
  so neither sonnet lines nor the poems' ``I.``/``II.``/``THRENOS.``/``THE ARGUMENT.`` become
  clients; speaker names that are only Roman numerals are never roles. Like LEAF we also drop
  "plays" with fewer than two characters.
* Front matter: a play's contents list and cast list are skipped. The body starts at its first
  heading after the cast list; without a cast list, where the contents list repeats its first
  heading (``ACT I`` ... ``ACT I``), at the second occurrence.
* Headings (``ACT I``, ``ACT I.``, ``SCENE II. A room.``, ``PROLOGUE``, ``THE PROLOGUE``,
  ``EPILOGUE``, ``INDUCTION``) end the current speech; so do other lines in capitals (``THE END``,
  a poem's title). Stage directions are skipped without ending the speech, which goes on after
  them (`` Juliet appears above at a window.`` inside Romeo's speech): lines indented exactly one
  space (`` Enter Hamlet.``, `` [_Exit._]``, and a direction's wrapped second line), lines starting
  ``Enter``/``Exit``/``Exeunt``/``Re-enter``/``Manet``/``Flourish``, and lines holding only a
  bracketed direction. Bracketed directions inside a speech line (``[_Aside._]``) are removed.
  Blank lines do not end a speech (as LEAF).
* Character names are upper-cased (LEAF: "SIR Toby" and "SIR TOBY" are one role). A client is
  (play, character), named as LEAF does: ``re.sub(r"\\W+", "_", f"{play}_{character}")``.

Samples (LEAF ``shake_utils.__txt_to_data``): every speech line (with its newline, runs of 2+
spaces collapsed) is prefixed with ``seq_length`` spaces and a window slides over it: x = 80
characters, y = the next one, so a line of L characters gives L samples. Characters map to LEAF's
80-letter vocabulary :data:`ALL_LETTERS`; typographic quotes and dashes become their ASCII forms
first, and any other character maps to index 79 (``}``), where LEAF's ``letter_to_vec``
(``ALL_LETTERS.find`` = -1, one-hot at position -1) puts it.

Split: each client's samples in text order, the last ``max(1, int(n * test_fraction))`` are its
test samples (contiguous, so overlapping windows do not leak into the test set). Filters: LEAF's
``min_samples`` (clients with fewer samples in all are dropped, LEAF ``-k``), then FedDyn's
``min_train_samples`` (FedDyn keeps users with > 2000 train samples) and the crops
``max_train_samples`` / ``max_test_samples`` (FedDyn: 2000 / 400, the first ones). FedDyn's choice of
100 random users is the ``natural`` partitioner's ``num_clients``.

Returns x (n, seq_length) uint8 character ids (stored as uint8), y (n,) int64 in 0..79, natural
clients for train and test; ``meta["client_names"]`` maps id -> LEAF user name.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from fedbench.data.errors import CorruptFileError, reading
from fedbench.data.store import Dataset

ALL_LETTERS = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
NUM_LETTERS = len(ALL_LETTERS)  # 80
OOV_INDEX = NUM_LETTERS - 1
LAYOUTS = ("auto", "modern", "leaf1994")
_ASCII = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": "-", "\u2013": "-",
                        "\u00a0": " ", "\t": " "})
_TABLE = np.full(256, OOV_INDEX, dtype=np.uint8)
for _i, _c in enumerate(ALL_LETTERS):
    _TABLE[ord(_c)] = _i

HEADING_RE = re.compile(r"^\s*(?:(?:ACT|SCENE|Act|Scene)\s+[IVXLC\d]+\b.*|(?:THE |The )?(?:PROLOGUE|EPILOGUE|"
                        r"INDUCTION|Prologue|Epilogue|Induction)(?:\s+.*)?)$")
MARKER_RE = re.compile(r"^\s*(?:Contents|CONTENTS|by William Shakespeare|Dramatis Person|DRAMATIS PERSON|"
                       r"PERSONS REPRESENTED|Persons Represented)")
CAST_RE = re.compile(r"^\s*(?:Dramatis Person|DRAMATIS PERSON|PERSONS REPRESENTED|Persons Represented)")
_UP = "A-Z\u00c0-\u00d6\u00d8-\u00de\u0152"  # ASCII and Latin-1 capitals, Œ (PHŒBE, ÆMILIA)
_NAME = rf"[{_UP}][{_UP}0-9'\-]*(?:\.? [{_UP}][{_UP}0-9'\-]*)*"
MODERN_SPEAKER_RE = re.compile(rf"^({_NAME})\.\s*$")
MODERN_INLINE_RE = re.compile(rf"^({_NAME}[{_UP}])\. (\S.*)$")
LEAF_SPEAKER_RE = re.compile(r"^  ([a-zA-Z][a-zA-Z ]*)\. (.*)")
LEAF_CONT_RE = re.compile(r"^    (.*)")
COE_SPEAKER_RE = re.compile(r"^([a-zA-Z][a-zA-Z ]*)\. (.*)")  # LEAF: THE COMEDY OF ERRORS is not indented
COE_CONT_RE = re.compile(r"^(.*)")
ROMAN_RE = re.compile(r"^[IVXLC]+$")
DIRECTION_RE = re.compile(r"^(?:Enter|Exit|Exeunt|Re-enter|Manet|Flourish)\b")
BRACKET_RE = re.compile(r"\[[^\]]*\]")


def _caps(s: str) -> bool:
    """Letters present, none lower case."""
    return any(c.isalpha() for c in s) and not any(c.islower() for c in s)


def _strip_gutenberg(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    for i, ln in enumerate(lines):
        if ln.startswith("*** START OF"):
            start = i + 1
        elif ln.startswith("*** END OF"):
            end = i
            break
    return lines[start:end]


def _next_nonblank(lines: list[str], i: int, limit: int = 8) -> str | None:
    for j in range(i + 1, min(i + 1 + limit, len(lines))):
        if lines[j].strip():
            return lines[j]
    return None


def _is_title(lines: list[str], i: int) -> bool:
    s = lines[i].strip()
    if len(s) < 4 or not _caps(s) or s.endswith(".") or HEADING_RE.match(s) or MARKER_RE.match(s):
        return False
    nxt = _next_nonblank(lines, i)
    if nxt is None:
        return False
    if MARKER_RE.match(nxt):
        return True
    # directly followed by a heading: only after >= 2 blank lines (or at the start), so that the
    # last entry of a cast list in capitals ("GHOST OF HAMLET'S FATHER") is not taken for a title
    blank_before = i == 0 or (i >= 2 and not lines[i - 1].strip() and not lines[i - 2].strip())
    return bool(HEADING_RE.match(nxt)) and blank_before


def _key(s: str) -> str:
    """A title compared without case, spaces or punctuation ("TWELFTH NIGHT; OR," = "Twelfth Night: or")."""
    return re.sub(r"[^0-9A-Z]", "", s.upper())


def _contents_titles(lines: list[str]) -> tuple[list[int], int]:
    """The works of the file's own table of contents, found in the text.

    The current pg100.txt opens with ``Contents`` and one title per line (THE SONNETS, the plays,
    A LOVER'S COMPLAINT, ..., VENUS AND ADONIS). Returns (the line index of each listed title's
    first occurrence after the list, the index where the list ends); ([], 0) when the first
    ``Contents`` line lists headings (a play's own contents) or nothing.
    """
    first = next((i for i, ln in enumerate(lines) if ln.strip() in ("Contents", "CONTENTS")), None)
    if first is None:
        return [], 0
    j = first + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    entries = []
    while j < len(lines) and lines[j].strip():
        entries.append(lines[j].strip())
        j += 1
    if not entries or any(HEADING_RE.match(e) for e in entries):
        return [], 0
    keys = {_key(e) for e in entries}
    found: dict[str, int] = {}
    for k in range(j, len(lines)):
        s = lines[k].strip()
        if s and _caps(s) and _key(s) in keys and _key(s) not in found:
            found[_key(s)] = k
    return sorted(found.values()), j


def _titles(lines: list[str]) -> list[int]:
    """Line indices where a work (play or poem) starts: the contents' titles plus :func:`_is_title`."""
    listed, after = _contents_titles(lines)
    return sorted(set(listed) | {i for i in range(after, len(lines)) if _is_title(lines, i)})


def _detect_layout(lines: list[str]) -> str:
    modern = sum(1 for ln in lines if MODERN_SPEAKER_RE.match(ln) and not HEADING_RE.match(ln))
    leaf = sum(1 for ln in lines if LEAF_SPEAKER_RE.match(ln))
    return "leaf1994" if leaf > modern else "modern"


def _body_start(lines: list[str]) -> int:
    """Index of the first body line of one play's lines (title excluded)."""
    heads = [i for i, ln in enumerate(lines) if HEADING_RE.match(ln)]
    if not heads:
        return 0
    cast = next((i for i, ln in enumerate(lines) if CAST_RE.match(ln)), None)
    if cast is not None:
        after = [i for i in heads if i > cast]
        return after[0] if after else cast + 1
    key = " ".join(lines[heads[0]].split()).casefold()
    same = [i for i in heads if " ".join(lines[i].split()).casefold() == key]
    return same[1] if len(same) > 1 else same[0]


def _clean(text: str) -> str:
    return BRACKET_RE.sub("", text).strip()


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_direction(line: str, s: str) -> bool:
    """A stage direction of the current edition: indented one space, an Enter/Exit/... line, or only brackets."""
    return _indent(line) == 1 or bool(DIRECTION_RE.match(s)) or (s.startswith("[") and not _clean(s))


def _speaker(s: str) -> str | None:
    """The role a modern-layout speaker line (``FIRST CITIZEN.``) names, else None."""
    m = MODERN_SPEAKER_RE.match(s)
    if not m or ROMAN_RE.match(m.group(1)):  # "II." numbers a poem of The Passionate Pilgrim
        return None
    return " ".join(m.group(1).split()).upper()


def _parse_modern(body: list[str], chars: dict[str, list[str]]) -> int:
    """Speeches of one play in the current edition's layout into ``chars``; returns the discarded count."""
    discarded, speaker = 0, None
    for ln in body:
        s = ln.strip()
        if not s:
            continue
        if HEADING_RE.match(ln):
            speaker = None
            continue
        if _is_direction(ln, s):  # inside a speech too: the speech goes on after it
            continue
        if _indent(ln) == 0:
            name = _speaker(s)
            if name is not None:
                speaker = name
                continue
            m = MODERN_INLINE_RE.match(s)
            if m and len(m.group(1)) >= 2 and not ROMAN_RE.match(m.group(1)):
                speaker = " ".join(m.group(1).split()).upper()
                if _clean(m.group(2)):
                    chars[speaker].append(_clean(m.group(2)))
                continue
        if _caps(s) and sum(c.isalpha() for c in s) >= 3:  # THE END, a centred title, a poem number
            speaker = None
            continue
        if speaker is None or not _clean(s):
            discarded += 1
            continue
        chars[speaker].append(_clean(s))  # unindented, or verse indentation (a shared line, a song)
    return discarded


def _parse_leaf1994(body: list[str], chars: dict[str, list[str]], unindented: bool) -> int:
    """LEAF's parse of one play of the 1994 edition; ``unindented``: THE COMEDY OF ERRORS' layout."""
    discarded, speaker, place = 0, None, False
    speaker_re, cont_re = (COE_SPEAKER_RE, COE_CONT_RE) if unindented else (LEAF_SPEAKER_RE, LEAF_CONT_RE)
    for ln in body:
        s = ln.strip()
        if not s:
            continue
        if HEADING_RE.match(ln):
            speaker, place = None, True
            continue
        if place:  # "Ephesus. The DUKE'S palace": the line under "ACT I. SCENE I." names the place
            place = False
            discarded += 1
            continue
        m = speaker_re.match(ln)
        if m and not HEADING_RE.match(m.group(1)):
            speaker = m.group(1).upper()
            if _clean(m.group(2)):
                chars[speaker].append(_clean(m.group(2)))
            continue
        if unindented and (s.startswith("<") or DIRECTION_RE.match(s)):
            speaker = None if s.startswith("<") else speaker  # LEAF: a "<<" notice ends the speech
            discarded += 1
            continue
        m = cont_re.match(ln) if speaker else None
        if m:
            if _clean(m.group(1)):
                chars[speaker].append(_clean(m.group(1)))
            continue
        discarded += 1
    return discarded


def parse_plays(text: str, layout: str = "auto") -> tuple[list[tuple[str, dict[str, list[str]]]], int]:
    """Split the complete works into plays and each character's speech lines.

    Args:
        text: the whole file (str).
        layout: ``"auto"``, ``"modern"`` or ``"leaf1994"`` (see the module docstring).

    Returns:
        (plays, discarded): plays is a list of (title, {CHARACTER: [line, ...]}) in text order,
        only plays (works with act/scene headings) with at least two characters; discarded counts
        the non-blank body lines of the plays that were neither headings, directions, speaker
        lines nor speech.
    """
    lines = _strip_gutenberg(text.translate(_ASCII).splitlines())
    if layout == "auto":
        layout = _detect_layout(lines)
    titles = _titles(lines)
    plays, discarded = [], 0
    for t, start in enumerate(titles):
        stop = titles[t + 1] if t + 1 < len(titles) else len(lines)
        body = lines[start + 1:stop]
        if not any(HEADING_RE.match(ln) for ln in body):
            continue  # the Sonnets, the poems: no act or scene, no speakers
        body = body[_body_start(body):]
        title = lines[start].strip()
        chars: dict[str, list[str]] = defaultdict(list)
        if layout == "leaf1994":
            discarded += _parse_leaf1994(body, chars, unindented=_key(title) == _key("THE COMEDY OF ERRORS"))
        else:
            discarded += _parse_modern(body, chars)
        chars = {k: v for k, v in chars.items() if v}
        if len(chars) > 1:
            plays.append((title, chars))
    return plays, discarded


def client_name(play: str, character: str) -> str:
    """LEAF's user name for (play, character)."""
    return re.sub(r"\W+", "_", (play + "_" + character).replace(" ", "_"))


def encode(text: str) -> np.ndarray:
    """Character ids (uint8) in :data:`ALL_LETTERS`; unknown characters -> 79."""
    t = text.translate(_ASCII)
    cps = np.fromiter(map(ord, t), dtype=np.uint32, count=len(t))
    return np.where(cps < 256, _TABLE[np.minimum(cps, 255)], OOV_INDEX).astype(np.uint8)


def line_samples(lines: list[str], seq_length: int = 80) -> tuple[np.ndarray, np.ndarray]:
    """LEAF windows over speech lines: (x (n, seq_length) uint8, y (n,) uint8), n = Σ (len + 1)."""
    if not lines:
        return np.empty((0, seq_length), np.uint8), np.empty(0, np.uint8)
    segs = [re.sub(r"  +", " ", ln) + "\n" for ln in lines]
    lens = np.array([len(t) for t in segs], dtype=np.int64)
    ids = encode("".join(" " * seq_length + t for t in segs))
    seg_start = np.concatenate([[0], np.cumsum(lens + seq_length)[:-1]])
    first = np.concatenate([[0], np.cumsum(lens)[:-1]])
    starts = np.repeat(seg_start - first, lens) + np.arange(int(lens.sum()))
    x = np.lib.stride_tricks.sliding_window_view(ids, seq_length)[starts]
    return np.ascontiguousarray(x), ids[starts + seq_length]


def check_params(seq_length, test_fraction, min_samples, min_train_samples, max_train_samples,
                 max_test_samples, layout) -> None:
    """Raises ValueError naming the first parameter out of range."""
    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    if not is_int(seq_length) or seq_length < 1:
        raise ValueError(f"shakespeare: seq_length must be an integer >= 1, got {seq_length!r} (LEAF: 80)")
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, (int, float)) or not 0 < test_fraction < 1:
        raise ValueError(f"shakespeare: test_fraction must be a number in (0, 1), got {test_fraction!r}")
    for key, v in (("min_samples", min_samples), ("min_train_samples", min_train_samples)):
        if not is_int(v) or v < 0:
            raise ValueError(f"shakespeare: {key} must be an integer >= 0, got {v!r}")
    for key, v in (("max_train_samples", max_train_samples), ("max_test_samples", max_test_samples)):
        if v is not None and (not is_int(v) or v < 1):
            raise ValueError(f"shakespeare: {key} must be null or an integer >= 1, got {v!r}")
    if layout not in LAYOUTS:
        raise ValueError(f"shakespeare: layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")


def load_shakespeare(paths: dict, name: str = "shakespeare", seq_length: int = 80, test_fraction: float = 0.2,
                     min_samples: int = 0, min_train_samples: int = 0, max_train_samples: int | None = None,
                     max_test_samples: int | None = None, layout: str = "auto") -> Dataset:
    """Build the LEAF Shakespeare dataset from ``paths["text"]`` (see the module docstring).

    Raises:
        ValueError: a parameter out of range.
        CorruptFileError: the file is not UTF-8 text, no play with speakers is found, or no client
            survives the filters.
    """
    check_params(seq_length, test_fraction, min_samples, min_train_samples, max_train_samples, max_test_samples, layout)
    path = Path(paths["text"])
    with reading(path, "UTF-8 plays text"):
        text = path.read_bytes().decode("utf-8-sig")
    plays, discarded = parse_plays(text, layout)
    if not plays:
        raise CorruptFileError(f"{path.name}: no play with speaking characters found; is it the Gutenberg "
                               f"complete works (pg100.txt)?")
    x_tr, y_tr, c_tr, x_te, y_te, c_te, names = [], [], [], [], [], [], []
    for title, chars in plays:
        for character, lines in chars.items():
            x, y = line_samples(lines, seq_length)
            n = len(y)
            if n < max(min_samples, 2):
                continue
            n_test = max(1, int(n * test_fraction))
            n_train = n - n_test
            if n_train < max(min_train_samples, 1):
                continue
            k = len(names)
            names.append(client_name(title, character))
            tr = slice(0, n_train if max_train_samples is None else min(n_train, max_train_samples))
            te = slice(n_train, n if max_test_samples is None else min(n, n_train + max_test_samples))
            for lst, arr in ((x_tr, x[tr]), (y_tr, y[tr]), (x_te, x[te]), (y_te, y[te])):
                lst.append(arr)
            c_tr.append(np.full(len(y[tr]), k, np.int64))
            c_te.append(np.full(len(y[te]), k, np.int64))
    if not names:
        raise CorruptFileError(f"{path.name}: no client left after the filters (min_samples={min_samples}, "
                               f"min_train_samples={min_train_samples}); lower them")
    return Dataset(
        name=name, x_train=np.concatenate(x_tr), y_train=np.concatenate(y_tr).astype(np.int64),
        x_test=np.concatenate(x_te), y_test=np.concatenate(y_te).astype(np.int64), num_classes=NUM_LETTERS,
        client_train=np.concatenate(c_tr), client_test=np.concatenate(c_te),
        meta={"client_names": names, "vocabulary": ALL_LETTERS, "num_plays": len(plays),
              "discarded_lines": discarded, "x_encoding": "character ids into meta.vocabulary"},
    )
