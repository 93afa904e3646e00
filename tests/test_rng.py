import pytest

from fedbench.rng import generator


def test_same_key_same_stream_and_distinct_keys_differ():
    a = generator(1, 2, 3, "batches").random(5)
    assert (a == generator(1, 2, 3, "batches").random(5)).all()
    for key in [(0, 2, 3, "batches"), (1, 1, 3, "batches"), (1, 2, 4, "batches"), (1, 2, 3, "sample")]:
        assert not (a == generator(*key).random(5)).all()
    # client -1 (the server) is a valid key distinct from client 0
    assert not (generator(0, 1, -1, "sample").random(3) == generator(0, 1, 0, "sample").random(3)).all()


def test_unknown_purpose_and_negative_seed():
    with pytest.raises(ValueError, match="purpose"):
        generator(0, 0, 0, "typo")
    with pytest.raises(ValueError, match="seed"):
        generator(-1)
