"""Shakespeare, LEAF style, from plays text in the Gutenberg layouts."""

import numpy as np
import pytest
from gutenberg import LEAF_ERA_EXCERPT, LEAF_ERA_EXPECTED, PG100_EXCERPT, PG100_EXPECTED
from rawfakes import LEAF_PLAYS, MODERN_PLAYS, pin

from fedbench.data.errors import CorruptFileError
from fedbench.data.partition import client_indices, make_partition
from fedbench.data.registry import prepare_dataset
from fedbench.data.shakespeare import ALL_LETTERS, client_name, encode, line_samples, parse_plays
from fedbench.data.store import load_dataset


def test_parse_modern_layout():
    plays, discarded = parse_plays(MODERN_PLAYS)
    assert [t for t, _ in plays] == ["THE TRAGEDY OF ELSINORE", "THE COMEDY OF ILLYRIA"]
    elsinore, illyria = plays[0][1], plays[1][1]
    assert elsinore == {
        "BARNARDO": ["Who's there?", "Long live the King!"],
        "FRANCISCO": ["Nay, answer me. Stand and unfold yourself."],
        "HAMLET": ["A little more than kin, and less than kind.", "O that this too too solid flesh would melt,",
                   "To be, or not to be."],
        "LADY MACBETH": ["Out, damned spot!"],
    }
    assert illyria == {
        "ORSINO": ["If music be the food of love, play on;", "Give me excess of it,   that, surfeiting,"],
        "SIR TOBY": ["What a plague means my niece?"],
    }
    assert discarded == 0


def test_parse_leaf_1994_layout():
    plays, _ = parse_plays(LEAF_PLAYS)
    assert plays == [("THE TRAGEDY OF ELSINORE", {"BER": ["Who's there?", "Long live the King!"],
                                                  "FRAN": ["Nay, answer me. Stand and unfold", "yourself."]})]
    assert parse_plays(LEAF_PLAYS, layout="modern")[0] == []


def test_leaf_windows():
    x, y = line_samples(["To be,  or"], seq_length=5)
    text = "     To be, or\n"  # 2+ spaces collapsed, newline appended, 5 spaces of padding
    assert len(y) == len("To be, or\n") and x.shape == (10, 5)
    decode = lambda ids: "".join(ALL_LETTERS[i] for i in ids)  # noqa: E731
    assert decode(x[0]) == "     " and decode([y[0]]) == "T"
    assert decode(x[-1]) == text[-6:-1] and decode([y[-1]]) == "\n"
    assert list(encode("a’—é")) == [ALL_LETTERS.index("a"), ALL_LETTERS.index("'"), ALL_LETTERS.index("-"), 79]
    assert client_name("THE TRAGEDY OF ELSINORE", "LADY MACBETH") == "THE_TRAGEDY_OF_ELSINORE_LADY_MACBETH"


def test_shakespeare_end_to_end(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pg100.txt").write_text(MODERN_PLAYS, encoding="utf-8")
    pin(monkeypatch, "shakespeare", mirror)
    out = prepare_dataset("shakespeare", {"source": "shakespeare"}, tmp_path / "shakespeare", mirror=mirror)
    ds = load_dataset(out, verify=True)
    names = ds.meta["client_names"]
    assert len(names) == 6 and "THE_COMEDY_OF_ILLYRIA_SIR_TOBY" in names
    assert ds.x_train.dtype == np.uint8 and ds.x_train.shape[1] == 80 and ds.num_classes == 80
    k = names.index("THE_TRAGEDY_OF_ELSINORE_BARNARDO")
    n = len("Who's there?\n") + len("Long live the King!\n")
    tr = np.flatnonzero(np.asarray(ds.client_train) == k)
    te = np.flatnonzero(np.asarray(ds.client_test) == k)
    assert len(tr) + len(te) == n and len(te) == max(1, int(n * 0.2))
    # contiguous split: the test part is the end of the role's text
    assert "".join(ALL_LETTERS[i] for i in ds.y_test[te]).endswith("King!\n")
    t = make_partition(ds, {"scheme": "natural", "num_clients": 3}, 0)
    assert len(client_indices(t)) == 3 and all(len(i) for i in client_indices(t, "test"))


def test_shakespeare_filters_and_crops(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pg100.txt").write_text(MODERN_PLAYS, encoding="utf-8")
    pin(monkeypatch, "shakespeare", mirror)
    cfg = {"source": "shakespeare", "min_train_samples": 60, "max_train_samples": 50, "max_test_samples": 7}
    ds = load_dataset(prepare_dataset("s", cfg, tmp_path / "s", mirror=mirror))
    assert ds.meta["client_names"] == ["THE_TRAGEDY_OF_ELSINORE_HAMLET", "THE_COMEDY_OF_ILLYRIA_ORSINO"]
    assert np.bincount(ds.client_train).tolist() == [50, 50] and np.bincount(ds.client_test).tolist() == [7, 7]
    with pytest.raises(CorruptFileError, match="no client left"):
        prepare_dataset("s", {"source": "shakespeare", "min_samples": 10**6}, tmp_path / "s2", mirror=mirror)
    with pytest.raises(ValueError, match="seq_length"):
        prepare_dataset("s", {"source": "shakespeare", "seq_length": 0}, tmp_path / "s3", mirror=mirror)


def test_not_a_plays_text(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pg100.txt").write_bytes(b"\xff\xfe binary \x00 junk")
    pin(monkeypatch, "shakespeare", mirror)
    with pytest.raises(CorruptFileError, match="pg100.txt"):
        prepare_dataset("s", {"source": "shakespeare"}, tmp_path / "s", mirror=mirror)
    (mirror / "pg100.txt").write_text("just some prose\nwith no plays\n")
    pin(monkeypatch, "shakespeare", mirror)
    with pytest.raises(CorruptFileError, match="pg100.txt.*no play"):
        prepare_dataset("s", {"source": "shakespeare"}, tmp_path / "s", mirror=mirror)
    assert not (tmp_path / "s").exists()


def test_title_before_heading_names_with_periods_and_non_ascii_capitals():
    text = ("\n\n\nTHE TRAGEDY OF NOTHING\n\n\nACT I\n\nSCENE I. A heath.\n\nPHŒBE.\nGood shepherd.\n\n"
            "MRS. QUICKLY.\nAlas the day!\n\n\n\nTHE SECOND PLAY\n\nDramatis Personæ\n\nKING\nGHOST OF A FATHER\n\n"
            "ACT I\n\nSCENE I. Here.\n\nKING.\nOne.\n\nGHOST.\nTwo.\n")
    plays, _ = parse_plays(text)
    assert plays == [("THE TRAGEDY OF NOTHING", {"PHŒBE": ["Good shepherd."], "MRS. QUICKLY": ["Alas the day!"]}),
                     ("THE SECOND PLAY", {"KING": ["One."], "GHOST": ["Two."]})]


def test_current_gutenberg_edition_layout():
    """pg100.txt as served today: header/licence, top-level Contents, the Sonnets first and the poems
    last (no clients from them, not even from "II." / "THRENOS." / "THE ARGUMENT."), per-play
    Contents and Dramatis Personae skipped, THE PROLOGUE spoken by the Chorus kept, speakers alone on
    their line, stage directions indented one space or bracketed (inside a speech too, which goes on
    after them), verse half-lines and songs indented several spaces kept as speech."""
    plays, discarded = parse_plays(PG100_EXCERPT)
    assert [t for t, _ in plays] == [t for t, _ in PG100_EXPECTED]
    for (title, got), (_, want) in zip(plays, PG100_EXPECTED):
        assert got == want, title
    assert discarded == 0
    assert parse_plays(PG100_EXCERPT, layout="modern") == (plays, discarded)  # auto detects the layout


def test_leaf_era_edition_layout():
    """The 1994 text LEAF's preprocess_shakespeare.py was written for: indented "  Name. speech"
    with 4-space continuations, the Sonnets dropped, THE COMEDY OF ERRORS unindented."""
    plays, _ = parse_plays(LEAF_ERA_EXCERPT)
    assert plays == LEAF_ERA_EXPECTED
    assert parse_plays(LEAF_ERA_EXCERPT, layout="leaf1994")[0] == plays


def test_gutenberg_excerpt_clients_and_leaf_filters(tmp_path, monkeypatch):
    """The prepared dataset has one client per (play, role) of the excerpt, each with exactly its
    speech's samples (LEAF: one sample per character of each line + newline); LEAF's min_samples
    drops the short roles."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "pg100.txt").write_text(PG100_EXCERPT, encoding="utf-8")
    pin(monkeypatch, "shakespeare", mirror)
    ds = load_dataset(prepare_dataset("s", {"source": "shakespeare"}, tmp_path / "s", mirror=mirror))
    roles = {client_name(t, r): lines for t, chars in PG100_EXPECTED for r, lines in chars.items()}
    assert sorted(ds.meta["client_names"]) == sorted(roles)
    assert ds.meta["num_plays"] == 5
    counts = np.bincount(ds.client_train, minlength=len(roles)) + np.bincount(ds.client_test, minlength=len(roles))
    for k, name in enumerate(ds.meta["client_names"]):
        assert counts[k] == sum(len(ln) + 1 for ln in roles[name]), name
    k = ds.meta["client_names"].index("THE_TRAGEDY_OF_ROMEO_AND_JULIET_ROMEO")
    ys = np.concatenate([ds.y_train[ds.client_train == k], ds.y_test[ds.client_test == k]])
    text = "".join(ALL_LETTERS[i] for i in ys)
    assert text == "He jests at scars that never felt a wound.\nBut soft, what light through yonder window breaks?\n" \
                   "It is the east, and Juliet is the sun!\n"
    cfg = {"source": "shakespeare", "min_samples": 100}
    kept = load_dataset(prepare_dataset("s2", cfg, tmp_path / "s2", mirror=mirror))
    want = sorted(n for n, lines in roles.items() if sum(len(ln) + 1 for ln in lines) >= 100)
    assert sorted(kept.meta["client_names"]) == want and 0 < len(want) < len(roles)
