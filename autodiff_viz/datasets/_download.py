"""Download a dataset file once, check it, and keep it: what ``keras.utils.get_file`` does for the datasets.

Where files go: ``$ADV_DATASETS_DIR`` if set, else Keras' own cache,
``$KERAS_HOME/datasets`` or ``~/.keras/datasets``. Sharing Keras' folder is
deliberate: a learner who already ran ``keras.datasets.mnist.load_data()``
has the file, and since every file is checked against the SHA-256 that
Keras publishes, a file found there is as good as a fresh download.

Where files come from: Keras' own addresses, unless ``adv.datasets.ORIGIN``
or ``$ADV_DATASETS_ORIGIN`` names another base URL (a mirror, or a test's
loopback server): the file is then fetched from ``<base>/<file name>``.

A download goes to ``<file>.part`` with a progress bar and becomes the
file only when its checksum matches; a damaged one is deleted and reported.
Without a connection the error says which URL failed, which file to place
by hand, where, and how to pass ``path=`` instead.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time
import urllib.error
import urllib.request

CHUNK = 1 << 16


class DownloadError(OSError):
    """A dataset file could not be downloaded (no connection, a server error, or a damaged file)."""


def cache_dir() -> str:
    """The folder dataset files are kept in (see the module docstring)."""
    own = os.environ.get("ADV_DATASETS_DIR")
    if own:
        return os.path.expanduser(own)
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    return os.path.join(home, "datasets")


def origin_of(url: str) -> str:
    """``url``, or the same file name under the base URL of ``adv.datasets.ORIGIN`` / ``$ADV_DATASETS_ORIGIN``."""
    from . import ORIGIN  # read at each call: users and tests set it after import
    base = ORIGIN or os.environ.get("ADV_DATASETS_ORIGIN")
    if not base:
        return url
    return base.rstrip("/") + "/" + url.rsplit("/", 1)[-1]


def file_hash(path: str, algorithm: str = "sha256") -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _algorithm(expected: str) -> str:
    """Keras' "auto": a 64-digit hash is SHA-256, a 32-digit one MD5 (the word-index files)."""
    return "md5" if len(expected) == 32 else "sha256"


def fetch(who: str, url: str, expected: str, path: str | None = None, subdir: str = "",
          path_arg: bool = True) -> str:
    """The local path of the file at ``url``: the cached copy if its hash is ``expected``, else a fresh
    download (checked the same way). ``path``: where to keep it (relative to :func:`cache_dir`, or
    absolute), by default the URL's file name in ``subdir``. ``who`` names the caller in errors;
    ``path_arg``: whether the caller takes ``path=`` (the offline error then suggests it)."""
    name = url.rsplit("/", 1)[-1]
    path = path or os.path.join(subdir, name)
    target = os.path.join(cache_dir(), os.path.expanduser(path))
    algorithm = _algorithm(expected)
    if os.path.exists(target):
        got = file_hash(target, algorithm)
        if got == expected:
            return target
        print(f"{who}: {target} is there but its {algorithm} is {got}, not {expected} (an incomplete or "
              "outdated file); downloading it again.", file=sys.stdout)
    source = origin_of(url)
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    part = target + ".part"
    try:
        _download(source, part)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        _remove(part)
        reason = getattr(exc, "reason", None) or exc
        raise DownloadError(
            f"{who}: could not download {source} ({reason}). Without internet access: download that file on "
            f"another machine, check that its {algorithm} is {expected}, and put it at {target} (the cache folder; "
            f"set ADV_DATASETS_DIR to use another one)"
            + (f", or put it anywhere and pass path='/where/you/put/{name}'" if path_arg else "")
            + ". To fetch from a mirror, set adv.datasets.ORIGIN (or ADV_DATASETS_ORIGIN) to its base URL.") from None
    got = file_hash(part, algorithm)
    if got != expected:
        _remove(part)
        raise DownloadError(f"{who}: the file downloaded from {source} is damaged: its {algorithm} is {got}, not "
                            f"{expected} as published. It was deleted; call again to download it anew (or place a "
                            f"good copy at {target}).")
    os.replace(part, target)
    return target


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _download(url: str, dest: str) -> None:
    """``url`` into ``dest`` with a text progress bar on stdout (Keras prints one too)."""
    print(f"Downloading data from {url}")
    with urllib.request.urlopen(url, timeout=60) as response, open(dest, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0)
        done, shown = 0, 0.0
        while True:
            block = response.read(CHUNK)
            if not block:
                break
            out.write(block)
            done += len(block)
            if time.monotonic() - shown > 0.1:
                shown = time.monotonic()
                sys.stdout.write("\r" + _bar(done, total))
                sys.stdout.flush()
        if total and done != total:
            raise ValueError(f"the connection ended after {done} of {total} bytes")
    sys.stdout.write("\r" + _bar(done, total or done) + "\n")
    sys.stdout.flush()


def _bar(done: int, total: int, width: int = 30) -> str:
    if not total:
        return f"{done / 1e6:.1f} MB"
    filled = int(width * done / total)
    arrow = ">" if filled < width else ""
    return f"{done}/{total} [{'=' * filled}{arrow}{'.' * (width - filled - len(arrow))}] {100 * done // total}%"
