"""The downloader: mirrors (directory, file://, http://), retries, verification, clear errors."""

import functools
import hashlib
import http.server
import threading

import pytest

from fedbench.data import download
from fedbench.data.download import fetch, fetch_all, source_of, verify
from fedbench.data.errors import ChecksumError, DataUnavailableError
from fedbench.data.sources import REMOTE, RemoteDataset, RemoteFile

PAYLOAD = b"fedbench test payload\n" * 1000


def _file(name="blob.bin", data=PAYLOAD, **kw):
    kw.setdefault("sha256", hashlib.sha256(data).hexdigest())
    kw.setdefault("size", len(data))
    return RemoteFile(name, f"https://unreachable.invalid/{name}", **kw)


@pytest.fixture
def http_mirror(tmp_path):
    """A local HTTP server over tmp_path/www; yields (url prefix, directory, request log)."""
    root = tmp_path / "www"
    root.mkdir()
    log = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        fail_first = set()

        def do_GET(self):
            log.append(self.path)
            if self.path in Handler.fail_first:
                Handler.fail_first.discard(self.path)
                self.send_error(503, "try again")
                return
            super().do_GET()

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/data", root, log, Handler
    srv.shutdown()
    srv.server_close()


def test_every_registry_entry_is_complete():
    for name, ds in REMOTE.items():
        assert ds.name == name and ds.files and ds.licence and ds.homepage and ds.papers
        for f in ds.files.values():
            assert f.url.startswith("https://") and f.url.endswith(f.name)
            assert f.sha256 is None or len(f.sha256) == 64
            assert f.md5 is None or len(f.md5) == 32
    assert REMOTE["cifar10"].files["archive"].md5 == "c58f30108f718f92721af3b95e74349a"
    assert REMOTE["cifar100"].files["archive"].md5 == "eb9058c3a382ffc7106e4002c42a8d85"
    mirror = "https://ossci-datasets.s3.amazonaws.com/mnist/"
    assert all(f.url.startswith(mirror) for f in REMOTE["mnist"].files.values())


def test_source_of_mirror_forms(tmp_path):
    f = _file()
    assert source_of(f) == f.url
    assert source_of(f, tmp_path) == str(tmp_path / "blob.bin")
    assert source_of(f, f"file://{tmp_path}") == str(tmp_path / "blob.bin")
    assert source_of(f, "https://host/prefix/") == "https://host/prefix/blob.bin"


def test_local_mirror_is_read_in_place(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "blob.bin").write_bytes(PAYLOAD)
    for mirror in (tmp_path / "m", f"file://{tmp_path / 'm'}"):
        assert fetch(_file(), tmp_path / "cache", mirror) == tmp_path / "m" / "blob.bin"
    assert not (tmp_path / "cache").exists()


def test_md5_only_and_unverifiable_files(tmp_path):
    (tmp_path / "blob.bin").write_bytes(PAYLOAD)
    verify(tmp_path / "blob.bin", _file(sha256=None, md5=hashlib.md5(PAYLOAD).hexdigest()))
    verify(tmp_path / "blob.bin", _file(sha256=None, size=None))  # nothing known: accepted (with a warning)
    with pytest.raises(ChecksumError, match=r"blob.bin.*md5"):
        verify(tmp_path / "blob.bin", _file(sha256=None, size=None, md5="0" * 32))


def test_corrupt_mirror_file_is_refused_with_its_name(tmp_path):
    (tmp_path / "blob.bin").write_bytes(PAYLOAD[:-1] + b"X")
    with pytest.raises(ChecksumError, match=r"blob.bin.*sha256"):
        fetch(_file(), tmp_path / "cache", tmp_path)
    (tmp_path / "blob.bin").write_bytes(PAYLOAD[:100])  # truncated
    with pytest.raises(ChecksumError, match=r"blob.bin.*size 100 bytes, expected"):
        fetch(_file(), tmp_path / "cache", tmp_path)


def test_http_mirror_download_retry_and_cache(http_mirror, tmp_path):
    url, root, log, handler = http_mirror
    (root / "data").mkdir()
    (root / "data" / "blob.bin").write_bytes(PAYLOAD)
    handler.fail_first = {"/data/blob.bin"}  # first request: 503, then served
    got = fetch(_file(), tmp_path / "cache", url, backoff=0.01, progress=False)
    assert got == tmp_path / "cache" / "blob.bin" and got.read_bytes() == PAYLOAD
    assert log == ["/data/blob.bin", "/data/blob.bin"]
    assert not [p for p in (tmp_path / "cache").iterdir() if p.name != "blob.bin"]  # no .part left
    fetch(_file(), tmp_path / "cache", url, progress=False)  # cached and verified: no new request
    assert len(log) == 2


def test_http_checksum_mismatch_leaves_nothing(http_mirror, tmp_path):
    url, root, log, _ = http_mirror
    (root / "data").mkdir()
    (root / "data" / "blob.bin").write_bytes(PAYLOAD + b"extra")
    with pytest.raises(ChecksumError, match="blob.bin"):
        fetch(_file(), tmp_path / "cache", url, progress=False)
    assert list((tmp_path / "cache").iterdir()) == []


def test_missing_files_give_one_message_with_the_mirror_hint(http_mirror, tmp_path):
    url, root, log, _ = http_mirror
    ds = RemoteDataset("toy", {"a": _file("a.bin"), "b": _file("b.bin")}, "https://example.org", "CC0", ("000",))
    with pytest.raises(DataUnavailableError) as e:
        fetch_all(ds, tmp_path / "cache", url, progress=False, retries=0)
    msg = str(e.value)
    assert "2 file(s)" in msg and f"{url}/a.bin" in msg and f"{url}/b.bin" in msg and "HTTP 404" in msg
    assert "data:" in msg and "mirror:" in msg and "https://unreachable.invalid/a.bin" in msg
    with pytest.raises(DataUnavailableError, match=r"a.bin from .*nowhere"):
        fetch_all(ds, tmp_path / "cache", tmp_path / "nowhere")


def test_no_network_error_names_canonical_url(tmp_path, monkeypatch):
    def offline(*a, **k):
        raise download.urllib.error.URLError("no route to host")

    monkeypatch.setattr(download.urllib.request, "urlopen", offline)
    ds = RemoteDataset("toy", {"a": _file("a.bin")}, "https://example.org", "CC0", ("000",))
    with pytest.raises(DataUnavailableError) as e:
        fetch_all(ds, tmp_path / "cache", None, progress=False, retries=1, backoff=0.0)
    msg = str(e.value)
    assert "https://unreachable.invalid/a.bin" in msg and "2 attempts failed" in msg and "no route" in msg
    assert "data.mirror" not in msg or "mirror:" in msg


def test_prepare_through_an_http_mirror_into_the_cache(http_mirror, tmp_path, monkeypatch):
    from rawfakes import make_mnist, pin

    from fedbench.data.registry import prepare_dataset
    from fedbench.data.store import load_dataset

    url, root, log, _ = http_mirror
    (root / "data").mkdir()
    make_mnist(root / "data", 12, 5)
    pin(monkeypatch, "mnist", root / "data")
    out = prepare_dataset("mnist", {"source": "mnist"}, tmp_path / "datasets" / "mnist", mirror=url, progress=False)
    assert load_dataset(out).x_train.shape == (12, 1, 28, 28) and len(log) == 4
    assert sorted(p.name for p in (tmp_path / "datasets" / "_downloads").iterdir()) == sorted(
        f.name for f in REMOTE["mnist"].files.values())


# ------------------------------------------------------------------------------ mirror SHA256SUMS


def test_read_sha256sums(tmp_path):
    d = hashlib.sha256(b"x").hexdigest()
    p = tmp_path / "SHA256SUMS"
    p.write_text(f"# made by sha256sum\n\n{d}  a.gz\n{d.upper()} *b.tar.gz\n")
    assert download.read_sha256sums(p) == {"a.gz": d, "b.tar.gz": d}
    p.write_text("nothex  a.gz\n")
    with pytest.raises(ValueError, match="SHA256SUMS:1"):
        download.read_sha256sums(p)


def test_mirror_checksums_are_used_only_when_trusted(tmp_path):
    import json

    from rawfakes import make_mnist

    from fedbench.data.registry import prepare_dataset

    mirror = tmp_path / "mirror"
    mirror.mkdir()
    make_mnist(mirror, 30, 10)
    sums = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in mirror.iterdir()}
    # only three of the four files listed: the fourth keeps the registry's checksum (and fails)
    listed = dict(list(sorted(sums.items()))[:3])
    (mirror / "SHA256SUMS").write_text("".join(f"{d}  {n}\n" for n, d in listed.items()))
    with pytest.raises(ChecksumError, match="registry"):  # default: the registry's checksums, always
        prepare_dataset("m", {"source": "mnist"}, tmp_path / "m", mirror=mirror)
    with pytest.raises(ChecksumError, match=sorted(sums)[3]):
        prepare_dataset("m", {"source": "mnist"}, tmp_path / "m", mirror=mirror, trust_mirror_checksums=True)
    (mirror / "SHA256SUMS").write_text("".join(f"{d}  {n}\n" for n, d in sums.items()))
    out = prepare_dataset("m", {"source": "mnist"}, tmp_path / "m", mirror=mirror, trust_mirror_checksums=True)
    meta = json.loads((out / "meta.json").read_text())
    assert meta["raw_checksums"].startswith("mirror SHA256SUMS for ")
    assert meta["raw_files"]["t10k-images-idx3-ubyte.gz"]["sha256"] == sums["t10k-images-idx3-ubyte.gz"]
    assert REMOTE["mnist"].files["train_images"].size == 9912422  # the registry itself is untouched
    # the registry's checksums are recorded when they were used
    assert json.loads((prepare_dataset("d", {"source": "digits"}, tmp_path / "d") / "meta.json").read_text()) \
        .get("raw_checksums") is None


def test_trusting_mirror_checksums_needs_a_local_mirror_with_sha256sums(tmp_path):
    remote = RemoteDataset("x", {"f": _file()}, "", "")
    with pytest.raises(DataUnavailableError, match="local mirror"):
        download.with_mirror_checksums(remote, "https://example.invalid/m")
    with pytest.raises(DataUnavailableError, match="SHA256SUMS does not exist"):
        download.with_mirror_checksums(remote, tmp_path)
    (tmp_path / "SHA256SUMS").write_text(f"{hashlib.sha256(b'other').hexdigest()}  blob.bin\n")
    assert download.with_mirror_checksums(remote, tmp_path).files["f"].sha256 == hashlib.sha256(b"other").hexdigest()
    assert download.with_mirror_checksums(remote, tmp_path).files["f"].size is None


# ------------------------------------------------------------------ mismatch messages name every bad file


def _toy(*files):
    return RemoteDataset("toy", {f.name: f for f in files}, "https://example.org", "CC0", ("000",))


def test_registry_mismatch_in_a_local_mirror_names_every_bad_file(tmp_path):
    (tmp_path / "a.bin").write_bytes(PAYLOAD + b"x")
    (tmp_path / "b.bin").write_bytes(PAYLOAD[:10])
    (tmp_path / "c.bin").write_bytes(PAYLOAD)
    with pytest.raises(ChecksumError) as e:
        fetch_all(_toy(_file("a.bin", size=None), _file("b.bin"), _file("c.bin")), tmp_path / "cache", tmp_path)
    msg = str(e.value)
    assert "2 file(s) failed verification" in msg and "c.bin" not in msg
    assert f"a.bin ({tmp_path / 'a.bin'}): sha256" in msg and "the registry's" in msg
    assert f"b.bin ({tmp_path / 'b.bin'}): size 10 bytes, expected {len(PAYLOAD)}" in msg
    assert f"replace {tmp_path / 'a.bin'} with a fresh download of https://unreachable.invalid/a.bin" in msg


def test_trusted_mirror_mismatch_blames_the_mirrors_sha256sums(tmp_path):
    good = hashlib.sha256(PAYLOAD).hexdigest()
    for n in ("a.bin", "b.bin"):
        (tmp_path / n).write_bytes(PAYLOAD + b"changed")
    (tmp_path / "SHA256SUMS").write_text(f"{good}  a.bin\n{good}  b.bin\n")
    with pytest.raises(ChecksumError) as e:
        fetch_all(_toy(_file("a.bin"), _file("b.bin")), tmp_path / "cache", tmp_path, trust_mirror_checksums=True)
    msg = str(e.value)
    sums = tmp_path / "SHA256SUMS"
    assert "2 file(s)" in msg and "registry" not in msg
    for n in ("a.bin", "b.bin"):
        assert f"{n} ({tmp_path / n}): sha256 " in msg
        assert f"sha256sum {n}" in msg
    assert msg.count(f"does not match the one in {sums}, {good}") == 2


def test_download_mismatch_says_the_server_sent_it(http_mirror, tmp_path):
    url, root, log, _ = http_mirror
    (root / "data").mkdir()
    (root / "data" / "blob.bin").write_bytes(PAYLOAD[:-1] + b"!")
    with pytest.raises(ChecksumError, match=r"blob.bin \(http.*sha256 .* registry's.*server sent"):
        fetch_all(_toy(_file()), tmp_path / "cache", url, progress=False)


# ------------------------------------------------------------------ offline: fail fast


def test_unresolvable_host_fails_at_once(tmp_path):
    import time

    files = [RemoteFile(n, f"http://fedbench-no-such-host.invalid/{n}") for n in ("a.bin", "b.bin")]
    t = time.monotonic()
    with pytest.raises(DataUnavailableError) as e:
        fetch_all(_toy(*files), tmp_path / "cache", None, progress=False)  # default retries and backoff
    assert time.monotonic() - t < 5
    msg = str(e.value)
    assert "cannot resolve the host name of fedbench-no-such-host.invalid" in msg and "offline" in msg
    assert "not tried: fedbench-no-such-host.invalid is unreachable" in msg and "data:" in msg


def test_refused_connection_fails_at_once(tmp_path):
    import socket
    import time

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there: the connection is refused
    t = time.monotonic()
    with pytest.raises(DataUnavailableError, match=rf"cannot connect to 127.0.0.1:{port} .*refuse"):
        fetch(RemoteFile("a.bin", f"http://127.0.0.1:{port}/a.bin"), tmp_path / "cache", progress=False)
    assert time.monotonic() - t < 5


def test_transient_errors_are_still_retried(tmp_path, monkeypatch):
    calls = []

    def flaky(*a, **k):
        calls.append(1)
        raise TimeoutError("timed out")

    monkeypatch.setattr(download.urllib.request, "urlopen", flaky)
    with pytest.raises(DataUnavailableError, match="3 attempts failed, last: TimeoutError"):
        fetch(_file(), tmp_path / "cache", progress=False, retries=2, backoff=0.0)
    assert len(calls) == 3


def test_a_refusing_proxy_is_named(tmp_path, monkeypatch):
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
    for var in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(download.urllib.request, "_opener", None)  # urlopen reads the proxies when it is built
    with pytest.raises(DataUnavailableError, match=r"cannot connect to the proxy http://127.0.0.1:9 \(for exam"):
        fetch(RemoteFile("a.bin", "https://example.org/a.bin"), tmp_path / "cache", progress=False)


def _silent_server(behaviour):
    """A TCP server on 127.0.0.1 whose every accepted connection is handed to ``behaviour(conn)``
    in its own thread; returns (port, accepted connections, stop)."""
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.1)
    conns, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conns.append(conn)
            threading.Thread(target=behaviour, args=(conn,), daemon=True).start()
        srv.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1], conns, stop


def test_a_host_that_accepts_and_never_answers_fails_within_the_deadline(tmp_path, monkeypatch):
    """The server accepts every connection and sends nothing. With more retries than fit in the
    deadline (30: without it, 31 × TIMEOUT plus the doubling pauses, far past the bound below), the
    file fails once DEADLINE seconds pass without an answer; the host is then
    counted as unreachable, so the dataset's second file on it is not tried, and the message says
    how to set data.mirror."""
    import time

    monkeypatch.setattr(download, "TIMEOUT", 0.4)
    monkeypatch.setattr(download, "DEADLINE", 1.0)
    monkeypatch.setattr(download, "BACKOFF", 0.05)
    monkeypatch.setattr(download, "RETRIES", 30)
    port, conns, stop = _silent_server(lambda conn: None)  # keeps the socket open, never writes
    url = f"http://127.0.0.1:{port}/data"
    outcome = {}

    def run():
        t = time.monotonic()
        try:
            fetch_all(_toy(_file("a.bin"), _file("b.bin")), tmp_path / "cache", url, progress=False)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            outcome["error"] = e
        outcome["seconds"] = time.monotonic() - t

    worker = threading.Thread(target=run, daemon=True)  # the code before the deadline waits 4 × 60 s
    worker.start()
    worker.join(15)
    stop.set()
    assert not worker.is_alive(), "fetch_all still waiting on a silent host after 15 s"
    # at the deadline (1 s), not after 4 × 60 s; the upper bound leaves room for a loaded 2-core machine
    assert 1.0 <= outcome["seconds"] < 8.0
    err = outcome["error"]
    assert isinstance(err, DataUnavailableError)
    msg = str(err)
    assert f"a.bin: no answer from 127.0.0.1:{port} for 1 s" in msg and "does not respond" in msg
    assert f"b.bin from {url}/b.bin (not tried: 127.0.0.1:{port} is unreachable" in msg
    assert "data:" in msg and "mirror:" in msg  # MIRROR_HELP
    assert 2 <= len(conns) <= 4  # retried within the deadline, each attempt bounded by TIMEOUT
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").iterdir())  # no .part left


def test_a_deadline_of_one_timeout_gives_a_silent_host_exactly_one_attempt(tmp_path, monkeypatch):
    """Counts, not clocks: with DEADLINE = TIMEOUT the first silent attempt already uses the whole
    deadline, so the file fails after one connection; the retry loop without a deadline would open
    retries + 1 = 4."""
    monkeypatch.setattr(download, "TIMEOUT", 0.3)
    monkeypatch.setattr(download, "DEADLINE", 0.3)
    monkeypatch.setattr(download, "BACKOFF", 0.05)
    port, conns, stop = _silent_server(lambda conn: None)
    outcome = {}

    def run():
        try:
            fetch_all(_toy(_file("a.bin")), tmp_path / "cache", f"http://127.0.0.1:{port}/data", progress=False)
        except Exception as e:  # noqa: BLE001 - the test inspects it
            outcome["error"] = e

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(15)
    stop.set()
    assert not worker.is_alive(), "fetch_all still waiting on a silent host after 15 s"
    assert isinstance(outcome["error"], DataUnavailableError)
    assert len(conns) == 1


def test_a_slow_transfer_is_not_cut_by_the_deadline(tmp_path, monkeypatch):
    """A host that keeps sending, a little at a time, for longer than DEADLINE (each gap shorter
    than TIMEOUT) is a working download: it completes and verifies."""
    import time

    monkeypatch.setattr(download, "TIMEOUT", 0.5)
    monkeypatch.setattr(download, "DEADLINE", 0.6)
    data = b"x" * 2000

    def trickle(conn):
        conn.recv(65536)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data))
        for i in range(0, len(data), 100):  # 20 pieces, 0.07 s apart: 1.4 s in all
            time.sleep(0.07)
            conn.sendall(data[i:i + 100])
        conn.close()

    port, conns, stop = _silent_server(trickle)
    try:
        t = time.monotonic()
        got = fetch(_file("slow.bin", data), tmp_path / "cache", f"http://127.0.0.1:{port}", progress=False)
        assert time.monotonic() - t > 0.6 and got.read_bytes() == data and len(conns) == 1
    finally:
        stop.set()
