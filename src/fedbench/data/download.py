"""Fetch and verify a dataset's raw files, from the canonical hosts or from a mirror.

``fetch_all(remote, cache_dir, mirror)`` returns ``{role: path}`` for every file of a
:class:`~fedbench.data.sources.RemoteDataset`:

* **No mirror**: each file is downloaded from its canonical URL into ``cache_dir/<name>``.
* **A local mirror** (a directory path, or ``file:///dir``): the file ``<mirror>/<name>`` is
  verified and read where it lies (nothing is copied).
* **A URL mirror** (``http(s)://host/prefix``): ``<prefix>/<name>`` is downloaded into the cache.

A download streams into a temporary sibling (``.<name>.part-*``) with a tqdm progress bar,
hashing as it goes, and is renamed into place only once its size and digests match; a failed or
interrupted download leaves no file under the final name. Transient failures (timeouts, dropped
connections, HTTP 5xx/429) are retried ``retries`` times with exponential backoff
(``backoff * 2**attempt`` seconds). Failures that a retry cannot fix fail at once: HTTP 4xx (e.g.
404), a host name that cannot be resolved (DNS failure: offline, or a wrong host), a refused
connection and an unreachable network; the other files of the dataset on that host are then not
tried, so an offline run fails within seconds. A host that accepts the connection but never
answers (or a network that drops its packets) is bounded too: each attempt's socket waits at most
:data:`TIMEOUT` seconds for the connection or the next bytes, and a file fails, its host counted
as unreachable, once :data:`DEADLINE` seconds have passed without a byte from the host (over all
attempts and backoff pauses; a transfer in progress is never cut by it). A cached file that fails
verification is deleted and fetched again.

Mirror checksums (tests and site mirrors; off by default): with ``trust_mirror_checksums=True``
(config ``data.trust_mirror_checksums``) the files listed in ``<mirror>/SHA256SUMS`` (the
``sha256sum`` output format: ``<hex digest>  <file name>`` per line) are verified against *that*
digest instead of the registry's (size, md5 and the LIBSVM row/feature counts are then not
checked); files it does not list keep the registry's checksums. Only a local mirror can vouch for
its own files this way. The default
always verifies the registry's canonical checksums; the prepared dataset's meta.json records
which were used (``raw_checksums``). This is how the workflow tests serve miniature files in the
real formats, and how a site can serve a re-released file (e.g. a newer Gutenberg pg100.txt).

Errors:
    DataUnavailableError (a FileNotFoundError): some files could not be obtained. One message
        lists every missing file, where it was looked for, and how to set ``data.mirror``.
    ChecksumError (a ValueError): files whose size or digest do not match. One message names every
        bad file of the dataset, which checksum it was checked against (the registry's, or the
        mirror's SHA256SUMS), the expected and the actual value, and the fix for that case.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import shutil
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import replace
from pathlib import Path

from fedbench.data.errors import ChecksumError, DataUnavailableError
from fedbench.data.sources import RemoteDataset, RemoteFile
from fedbench.files import atomic_write

log = logging.getLogger(__name__)

CHUNK = 1 << 20  # bytes read per step
#: Seconds one attempt's socket waits for the connection, the response headers or the next bytes.
TIMEOUT = 20.0
#: Seconds a file may go without a byte from its host, over all attempts and the pauses between
#: them, before it fails and its host is counted as unreachable (a silent host fails within this).
DEADLINE = 60.0
#: Further attempts after a retryable failure, and the pause before the first (doubled each time).
RETRIES = 3
BACKOFF = 1.0
MIRROR_HELP = (
    "To prepare it without network access, download these files on a machine that has it, put them "
    "(under the same names) in one directory that this machine can read, and point the workflow at it:\n"
    "    data:\n"
    "      mirror: /path/to/mirror        # or file:///path/to/mirror, or https://host/prefix\n"
    "in the config (or `snakemake --config data='{mirror: /path/to/mirror}'`; in Python: "
    "prepare_dataset(..., mirror='/path/to/mirror'))."
)


# --------------------------------------------------------------------------- locations


def _local_mirror(mirror: str | os.PathLike | None) -> Path | None:
    """The mirror directory when ``mirror`` is local (a path or file:// URL), else None."""
    if mirror is None:
        return None
    m = os.fspath(mirror)
    parsed = urllib.parse.urlparse(m)
    if parsed.scheme == "file":
        return Path(urllib.request.url2pathname(parsed.path))
    if parsed.scheme in ("http", "https", "ftp"):
        return None
    return Path(m)


def source_of(file: RemoteFile, mirror: str | os.PathLike | None = None) -> str:
    """Where ``file`` is fetched from: its canonical URL, ``<mirror>/<name>`` (a local path) or
    ``<mirror URL>/<name>``."""
    local = _local_mirror(mirror)
    if local is not None:
        return str(local / file.name)
    if mirror is not None:
        return os.fspath(mirror).rstrip("/") + "/" + urllib.parse.quote(file.name)
    return file.url


# --------------------------------------------------------------------------- mirror checksums

SUMS_FILE = "SHA256SUMS"


def read_sha256sums(path: str | os.PathLike) -> dict[str, str]:
    """``{file name: sha256}`` from a ``sha256sum``-format file (``#`` comments and blank lines skipped).

    Raises:
        ValueError: a line that is not ``<64 hex digits> [ *]<name>`` (the message names the line).
    """
    out = {}
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        digest = parts[0].lower()
        if len(parts) != 2 or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"{path}:{i}: not a sha256sum line ('<64 hex digits>  <file name>'): {line!r}")
        out[parts[1].lstrip("*").strip()] = digest
    return out


def with_mirror_checksums(remote: RemoteDataset, mirror: str | os.PathLike | None) -> RemoteDataset:
    """``remote`` with the checksums of the files listed in ``<mirror>/SHA256SUMS``.

    Raises:
        DataUnavailableError: ``mirror`` is not a local directory, or it has no SHA256SUMS file.
        ValueError: a malformed SHA256SUMS line.
    """
    local = _local_mirror(mirror)
    if local is None:
        raise DataUnavailableError(
            f"trust_mirror_checksums needs a local mirror directory (got {mirror!r}); an http(s) mirror is "
            f"always verified against the registry's checksums")
    sums_path = local / SUMS_FILE
    if not sums_path.is_file():
        raise DataUnavailableError(
            f"trust_mirror_checksums is set but {sums_path} does not exist; write it with "
            f"`sha256sum <files> > {SUMS_FILE}` in the mirror, or unset trust_mirror_checksums")
    sums = read_sha256sums(sums_path)
    files = {}
    for role, f in remote.files.items():
        if f.name in sums:
            if f.sha256 is not None and f.sha256.lower() != sums[f.name]:
                log.warning("%s: verified against %s (%s…), not the registry's sha256 (%s…)", f.name, sums_path,
                            sums[f.name][:12], f.sha256[:12])
            f = replace(f, sha256=sums[f.name], md5=None, size=None, rows=None, features=None,
                        checksum_from=str(sums_path))
        files[role] = f
    return replace(remote, files=files)


# --------------------------------------------------------------------------- verification


class _Digests:
    """sha256 and md5 of a byte stream, updated chunk by chunk."""

    def __init__(self):
        self.sha256, self.md5, self.size = hashlib.sha256(), hashlib.md5(), 0

    def update(self, chunk: bytes) -> None:
        self.sha256.update(chunk)
        self.md5.update(chunk)
        self.size += len(chunk)


def _fix(file: RemoteFile, where: str, kind: str) -> str:
    """What to do about a file that fails verification, for the message."""
    if file.checksum_from != "registry":
        return (f"either {where} is not the intended file (copy a good one into the mirror; canonical URL: "
                f"{file.url}) or its line in {file.checksum_from} is wrong (after checking the file, rewrite that "
                f"line with `sha256sum {file.name}` in the mirror)")
    if kind == "mirror":
        return (f"the copy in your mirror is corrupt, truncated or a different release: replace {where} with a "
                f"fresh download of {file.url}")
    if kind == "download":
        return (f"the server sent a different or damaged file (nothing was kept); try again later, or download "
                f"{file.url} elsewhere and use data.mirror")
    return "the file is corrupt, truncated or not the one the registry lists; delete it and fetch it again"


def _check(file: RemoteFile, d: _Digests, where: str, kind: str = "file") -> None:
    registry = file.checksum_from == "registry"
    if file.size is not None and d.size != file.size:
        raise ChecksumError(
            f"{file.name} ({where}): size {d.size} bytes, expected {file.size} (the registry's size, "
            f"fedbench.data.sources): {_fix(file, where, kind)}"
        )
    for algo in ("sha256", "md5"):
        want = getattr(file, algo)
        if want is not None:
            got = getattr(d, algo).hexdigest()
            if got != want.lower():
                src = "the registry's (fedbench.data.sources)" if registry else f"the one in {file.checksum_from}"
                raise ChecksumError(
                    f"{file.name} ({where}): {algo} {got} does not match {src}, {want.lower()}: "
                    f"{_fix(file, where, kind)}"
                )
    if file.size is None and file.sha256 is None and file.md5 is None and file.rows is None:
        log.warning("%s: no size or checksum is known for this file; accepted unverified", file.name)


def verify(path: str | os.PathLike, file: RemoteFile, kind: str = "file") -> None:
    """Check a file on disk against the registry's size, sha256 and md5 (those that are known).

    ``kind`` (``"mirror"``, ``"cache"`` or ``"file"``) only chooses the advice in the message.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ChecksumError: the size or a digest differs; the message names the file.
    """
    d = _Digests()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            d.update(chunk)
    _check(file, d, str(path), kind)


# --------------------------------------------------------------------------- download


class _Retryable(Exception):
    pass


class HostUnreachableError(DataUnavailableError):
    """The host cannot be reached at all (DNS failure, connection refused, no route): not retried."""

    def __init__(self, message: str, host: str):
        super().__init__(message)
        self.host = host


_UNREACHABLE_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED}


def _unreachable(e: BaseException, url: str) -> HostUnreachableError | None:
    """A :class:`HostUnreachableError` when ``e`` (from urlopen) means the host cannot be reached."""
    parsed = urllib.parse.urlparse(url)
    host = parsed.netloc or url
    proxy = urllib.request.getproxies().get(parsed.scheme)
    if proxy and parsed.hostname and urllib.request.proxy_bypass(parsed.hostname):
        proxy = None
    target = f"the proxy {proxy} (for {host})" if proxy else host
    reason = getattr(e, "reason", None)
    for err in (reason, e):
        if isinstance(err, socket.gaierror):
            return HostUnreachableError(
                f"cannot resolve the host name of {target} ({err.strerror or err}): this machine is offline or has "
                f"no DNS, or the host name is wrong; not retried", host)
        if isinstance(err, ConnectionRefusedError) or (isinstance(err, OSError) and err.errno in _UNREACHABLE_ERRNOS):
            return HostUnreachableError(
                f"cannot connect to {target} ({err.strerror or err}): it is down or refuses connections, or this "
                f"machine has no route to it; not retried", host)
    return None


def _download_once(url: str, file: RemoteFile, dest: Path, timeout: float, progress: bool,
                   heard: list[float]) -> None:
    """One attempt; ``heard[0]`` is set to ``time.monotonic()`` whenever the host answers (headers, data)."""
    from tqdm.auto import tqdm

    req = urllib.request.Request(url, headers={"User-Agent": "fedbench (dataset download)"})
    with atomic_write(dest) as tmp:
        with open(tmp, "wb") as out:
            try:
                resp = urllib.request.urlopen(req, timeout=timeout)
            except urllib.error.HTTPError as e:
                if e.code >= 500 or e.code == 429:
                    raise _Retryable(f"HTTP {e.code} {e.reason}") from e
                raise DataUnavailableError(f"HTTP {e.code} {e.reason}") from e
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
                fatal = _unreachable(e, url)
                if fatal is not None:
                    raise fatal from e
                raise _Retryable(f"{type(e).__name__}: {getattr(e, 'reason', e)}") from e
            heard[0] = time.monotonic()
            with resp:
                length = resp.headers.get("Content-Length")
                total = int(length) if length and length.isdigit() else file.size
                d = _Digests()
                with tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=file.name,
                          disable=not progress, leave=False) as bar:
                    try:
                        for chunk in iter(lambda: resp.read(CHUNK), b""):
                            out.write(chunk)
                            d.update(chunk)
                            bar.update(len(chunk))
                            heard[0] = time.monotonic()
                    except (TimeoutError, ConnectionError, OSError) as e:  # incl. http.client.IncompleteRead
                        raise _Retryable(f"transfer interrupted after {d.size} bytes: {e}") from e
                if length and length.isdigit() and d.size != int(length):
                    raise _Retryable(f"transfer ended after {d.size} of {length} bytes")
        _check(file, d, url, "download")


def fetch(
    file: RemoteFile,
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    retries: int | None = None,
    backoff: float | None = None,
    timeout: float | None = None,
    progress: bool = True,
    deadline: float | None = None,
) -> Path:
    """Return a verified local copy of ``file``.

    Args:
        file: the registry entry.
        cache_dir: where downloads are kept (created if needed), e.g. ``resources/downloads``.
        mirror: None (canonical URL), a local directory / ``file://`` URL (read in place), or an
            ``http(s)://`` prefix (the file name is appended).
        retries: further attempts after a retryable network failure (>= 0); None = :data:`RETRIES`.
        backoff: seconds before the first retry, doubled each time; None = :data:`BACKOFF`.
        timeout: seconds an attempt's socket waits for the connection or the next bytes; None =
            :data:`TIMEOUT`.
        progress: show a tqdm progress bar (on stderr).
        deadline: seconds the file may go without a byte from the host, over all attempts and
            pauses, before it fails (not cutting a transfer in progress); None = :data:`DEADLINE`.

    Returns:
        The path of the verified file (under ``cache_dir``, or in the local mirror).

    Raises:
        DataUnavailableError: the file is not in the local mirror, or every attempt failed
            (:class:`HostUnreachableError` at once, without retries, when the host cannot be reached,
            and once ``deadline`` seconds pass without an answer from it).
        ChecksumError: the file was obtained but its size or digest is wrong.
    """
    retries = RETRIES if retries is None else retries
    backoff = BACKOFF if backoff is None else backoff
    timeout = TIMEOUT if timeout is None else timeout
    deadline = DEADLINE if deadline is None else deadline
    where = source_of(file, mirror)
    local = _local_mirror(mirror)
    if local is not None:
        path = local / file.name
        if not path.is_file():
            raise DataUnavailableError(f"{file.name}: not found at {path}")
        verify(path, file, "mirror")
        return path

    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / file.name
    if dest.is_file():
        try:
            verify(dest, file, "cache")
            return dest
        except ChecksumError as e:
            log.warning("cached %s fails verification (%s); fetching it again", dest, e)
            dest.unlink()
    last, made = "", 0
    heard = [time.monotonic()]  # when the host last answered (the start, before it has)
    for attempt in range(retries + 1):
        pause = backoff * 2 ** (attempt - 1) if attempt else 0.0
        if time.monotonic() + pause >= heard[0] + deadline:
            break
        time.sleep(pause)
        try:
            made += 1
            _download_once(where, file, dest, min(timeout, heard[0] + deadline - time.monotonic()), progress, heard)
            return dest
        except _Retryable as e:
            last = str(e)
            log.warning("%s: attempt %d/%d failed: %s", where, attempt + 1, retries + 1, last)
        except HostUnreachableError as e:
            raise HostUnreachableError(f"{file.name}: {e}", e.host) from e
        except DataUnavailableError as e:
            raise DataUnavailableError(f"{file.name}: {e}") from e
    else:
        raise DataUnavailableError(f"{file.name}: {retries + 1} attempts failed, last: {last}")
    host = urllib.parse.urlparse(where).netloc or where
    raise HostUnreachableError(
        f"{file.name}: no answer from {host} for {deadline:g} s ({made} attempt(s), last: {last}): the host "
        f"accepts connections but does not respond, or the network drops its packets; not retried further", host)


class FetchedFiles(dict):
    """``{role: verified path}``, as returned by :func:`fetch_all`.

    Attributes:
        remote: the :class:`RemoteDataset` the files were verified against (after mirror
            checksums, if trusted). Readers check its ``rows``/``features`` after parsing.
    """

    def __init__(self, paths: dict, remote: RemoteDataset):
        super().__init__(paths)
        self.remote = remote


def fetch_all(
    remote: RemoteDataset,
    cache_dir: str | os.PathLike,
    mirror: str | os.PathLike | None = None,
    roles: tuple[str, ...] | None = None,
    trust_mirror_checksums: bool = False,
    **kwargs,
) -> FetchedFiles:
    """Fetch every file of ``remote`` (or only ``roles``); see :func:`fetch` for the arguments.

    With ``trust_mirror_checksums`` the files listed in the local mirror's SHA256SUMS are
    verified against it (:func:`with_mirror_checksums`; module docstring). Every file is tried
    (and verified) before an error is raised, except files on a host already found unreachable.

    Returns:
        ``{role: verified path}`` (a :class:`FetchedFiles`, which also carries ``remote``).

    Raises:
        ChecksumError: one message naming every file whose size or digest is wrong (and, after
            them, any that could not be obtained).
        DataUnavailableError: one message listing every file that could not be obtained, where it
            was looked for and why, and how to set ``data.mirror``.
    """
    if trust_mirror_checksums:
        remote = with_mirror_checksums(remote, mirror)
    paths, missing, bad, down = {}, [], [], {}
    for role, file in remote.files.items():
        if roles is not None and role not in roles:
            continue
        where = source_of(file, mirror)
        host = urllib.parse.urlparse(where).netloc
        if host and host in down:
            missing.append(f"  - {file.name} from {where} (not tried: {host} is unreachable, see {down[host]})")
            continue
        try:
            paths[role] = fetch(file, cache_dir, mirror, **kwargs)
        except HostUnreachableError as e:
            down[e.host] = file.name
            missing.append(f"  - {file.name} from {where} ({e})")
        except DataUnavailableError as e:
            missing.append(f"  - {file.name} from {where} ({e})")
        except ChecksumError as e:
            bad.append(f"  - {e}")
    if bad:
        raise ChecksumError(
            f"dataset {remote.name!r}: {len(bad)} file(s) failed verification:\n" + "\n".join(bad)
            + (f"\nand {len(missing)} file(s) could not be obtained:\n" + "\n".join(missing) if missing else "")
        )
    if missing:
        raise DataUnavailableError(
            f"dataset {remote.name!r}: {len(missing)} file(s) could not be obtained:\n" + "\n".join(missing) + "\n"
            + (f"Canonical sources: {', '.join(remote.files[r].url for r in remote.files)}.\n" if mirror else "")
            + MIRROR_HELP
        )
    return FetchedFiles(paths, remote)


def copy_to_mirror(paths: dict[str, Path], mirror_dir: str | os.PathLike) -> None:
    """Copy fetched files into a directory usable as a local ``data.mirror`` (same file names)."""
    mirror_dir = Path(mirror_dir)
    mirror_dir.mkdir(parents=True, exist_ok=True)
    for p in paths.values():
        if p.resolve() != (mirror_dir / p.name).resolve():
            shutil.copy2(p, mirror_dir / p.name)
