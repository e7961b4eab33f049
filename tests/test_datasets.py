"""adv.datasets: Keras' loaders, downloading from a loopback http.server that serves files the tests make.

Every file here is small but in the real format (``.npz``, gzipped IDX, a
``.tar.gz`` of protocol-2 pickles); the published checksums are swapped for
those of the test files, so the download, cache, damage and offline paths
run exactly as for the real files. Nothing reaches beyond 127.0.0.1.
"""
import gzip
import hashlib
import http.server
import io
import os
import pickle
import socket
import tarfile
import threading

import numpy as np
import pytest

from autodiff_viz import datasets
from autodiff_viz.datasets import _download

RNG = np.random.default_rng(3)


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A loopback server for ``tmp_path/served``; yields ``(folder, requests)`` (each request's path)."""
    served = tmp_path / "served"
    served.mkdir()
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    monkeypatch.setenv("ADV_DATASETS_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(datasets, "ORIGIN", f"http://127.0.0.1:{httpd.server_address[1]}/")
    yield served, requests
    httpd.shutdown()
    httpd.server_close()


def sha256(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def serve_npz(served, name, module, monkeypatch, **arrays):
    path = served / name
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    monkeypatch.setattr(module, "SHA256", sha256(path))
    return path


def small_mnist(served, monkeypatch):
    arrays = {"x_train": RNG.integers(0, 256, (6, 28, 28), dtype=np.uint8),
              "y_train": RNG.integers(0, 10, 6).astype(np.uint8),
              "x_test": RNG.integers(0, 256, (2, 28, 28), dtype=np.uint8),
              "y_test": RNG.integers(0, 10, 2).astype(np.uint8)}
    serve_npz(served, "mnist.npz", datasets.mnist, monkeypatch, **arrays)
    return arrays


# ---------------------------------------------------------------------------
# the download: once, checked, cached; damaged; offline
# ---------------------------------------------------------------------------
def test_mnist_downloads_once_into_the_cache_and_returns_keras_structure(server, monkeypatch, tmp_path, capsys):
    served, requests = server
    arrays = small_mnist(served, monkeypatch)
    (x_train, y_train), (x_test, y_test) = datasets.mnist.load_data()
    assert requests == ["/mnist.npz"]
    out = capsys.readouterr().out
    assert "Downloading data from http://127.0.0.1" in out and "100%" in out      # the progress bar ends full
    assert (tmp_path / "cache" / "mnist.npz").exists() and not (tmp_path / "cache" / "mnist.npz.part").exists()
    for got, key in [(x_train, "x_train"), (y_train, "y_train"), (x_test, "x_test"), (y_test, "y_test")]:
        assert got.dtype == np.uint8 and np.array_equal(got, arrays[key])
    assert x_train.shape == (6, 28, 28) and y_train.shape == (6,)

    again = datasets.mnist.load_data()           # second call: from the cache, no request
    assert requests == ["/mnist.npz"] and np.array_equal(again[0][0], x_train)
    assert "Downloading" not in capsys.readouterr().out


def test_a_damaged_download_is_deleted_and_reported(server, monkeypatch, tmp_path):
    served, requests = server
    small_mnist(served, monkeypatch)
    published = datasets.mnist.SHA256
    monkeypatch.setattr(datasets.mnist, "SHA256", "0" * 64)        # the file served no longer matches
    with pytest.raises(datasets.DownloadError, match=r"mnist.load_data: the file downloaded from "
                                                     r"http://127.0.0.1:\d+/mnist.npz is damaged: its sha256 is "
                                                     + published + ", not 0{64}") as info:
        datasets.mnist.load_data()
    assert "deleted" in str(info.value)
    assert list((tmp_path / "cache").iterdir()) == []        # neither the file nor its .part is left


def test_a_cached_file_with_the_wrong_checksum_is_downloaded_again(server, monkeypatch, tmp_path, capsys):
    served, requests = server
    arrays = small_mnist(served, monkeypatch)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "mnist.npz").write_bytes(b"half a file")
    (x_train, _), _ = datasets.mnist.load_data()
    assert requests == ["/mnist.npz"] and np.array_equal(x_train, arrays["x_train"])
    assert "not " + datasets.mnist.SHA256 in capsys.readouterr().out


def closed_port_origin():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/"      # nothing listens there: connection refused


def test_offline_error_names_url_file_folder_hash_and_path_argument(monkeypatch, tmp_path):
    monkeypatch.setenv("ADV_DATASETS_DIR", str(tmp_path / "cache"))
    origin = closed_port_origin()
    monkeypatch.setattr(datasets, "ORIGIN", origin)
    with pytest.raises(datasets.DownloadError) as info:
        datasets.mnist.load_data()
    text = str(info.value)
    assert f"could not download {origin}mnist.npz" in text and "refused" in text.lower()
    assert f"put it at {tmp_path / 'cache' / 'mnist.npz'}" in text
    assert datasets.mnist.SHA256 in text and "path='/where/you/put/mnist.npz'" in text
    assert not (tmp_path / "cache" / "mnist.npz.part").exists()


def test_offline_a_file_placed_by_hand_at_path_loads_without_any_request(server, monkeypatch, tmp_path):
    served, requests = server
    arrays = small_mnist(served, monkeypatch)
    placed = tmp_path / "elsewhere" / "my_mnist.npz"
    placed.parent.mkdir()
    placed.write_bytes((served / "mnist.npz").read_bytes())
    monkeypatch.setattr(datasets, "ORIGIN", closed_port_origin())
    (_, _), (x_test, y_test) = datasets.mnist.load_data(path=str(placed))
    assert requests == [] and np.array_equal(y_test, arrays["y_test"])


def test_without_override_the_cache_is_keras_folder_and_the_url_keras_one(monkeypatch, tmp_path):
    monkeypatch.delenv("ADV_DATASETS_DIR", raising=False)
    monkeypatch.delenv("ADV_DATASETS_ORIGIN", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    assert datasets.cache_dir() == str(tmp_path / "kh" / "datasets")
    assert _download.origin_of(datasets.mnist.URL) == \
        "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
    monkeypatch.setenv("ADV_DATASETS_ORIGIN", "http://mirror.example/keras")
    assert _download.origin_of(datasets.cifar10.URL) == "http://mirror.example/keras/cifar-10-python.tar.gz"


# ---------------------------------------------------------------------------
# formats: gzipped IDX, CIFAR's pickles in a tar.gz, ragged sequences in .npz
# ---------------------------------------------------------------------------
def idx_gz(path, array, labels):
    header = np.array([2049 if labels else 2051, *array.shape], dtype=">i4").tobytes()
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def test_fashion_mnist_reads_the_gzipped_idx_files_into_its_own_folder(server, monkeypatch, tmp_path):
    served, requests = server
    parts = {"train-labels-idx1-ubyte.gz": np.arange(5) % 10, "train-images-idx3-ubyte.gz":
             RNG.integers(0, 256, (5, 28, 28)), "t10k-labels-idx1-ubyte.gz": np.array([9, 0]),
             "t10k-images-idx3-ubyte.gz": RNG.integers(0, 256, (2, 28, 28))}
    hashes = {}
    for name, array in parts.items():
        idx_gz(served / name, array, labels="labels" in name)
        hashes[name] = sha256(served / name)
    monkeypatch.setattr(datasets.fashion_mnist, "FILES", hashes)
    (x_train, y_train), (x_test, y_test) = datasets.fashion_mnist.load_data()
    assert sorted(requests) == sorted("/" + n for n in parts)
    assert x_train.shape == (5, 28, 28) and x_train.dtype == np.uint8 and y_test.tolist() == [9, 0]
    assert np.array_equal(x_test, parts["t10k-images-idx3-ubyte.gz"])
    assert sorted(os.listdir(tmp_path / "cache" / "fashion-mnist")) == sorted(parts)


def cifar_archive(path, folder, members):
    """A .tar.gz of protocol-2 pickles (the CIFAR files are Python 2 pickles; protocol 2 is theirs)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            raw = pickle.dumps(content, protocol=2)
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))


def test_cifar10_reads_the_pickled_batches_channels_last(server, monkeypatch):
    served, _ = server
    batches = {f"data_batch_{i}": {b"batch_label": b"training batch", b"labels": [i, i + 1],
                                   b"data": RNG.integers(0, 256, (2, 3072), dtype=np.uint8)} for i in range(1, 6)}
    batches["test_batch"] = {b"labels": [7], b"data": RNG.integers(0, 256, (1, 3072), dtype=np.uint8)}
    cifar_archive(served / "cifar-10-python.tar.gz", "cifar-10-batches-py", batches)
    monkeypatch.setattr(datasets.cifar10, "SHA256", sha256(served / "cifar-10-python.tar.gz"))
    (x_train, y_train), (x_test, y_test) = datasets.cifar10.load_data()
    assert x_train.shape == (10, 32, 32, 3) and x_train.dtype == np.uint8
    assert y_train.shape == (10, 1) and y_train.dtype == np.uint8 and y_train[:, 0].tolist() == \
        [1, 2, 2, 3, 3, 4, 4, 5, 5, 6]
    first = batches["data_batch_1"][b"data"][0]
    assert np.array_equal(x_train[0, :, :, 0], first[:1024].reshape(32, 32))       # red plane, row-major
    assert np.array_equal(x_train[0, :, :, 2], first[2048:].reshape(32, 32))       # blue plane
    assert x_test.shape == (1, 32, 32, 3) and y_test.tolist() == [[7]]


def test_cifar100_fine_and_coarse_labels(server, monkeypatch):
    served, _ = server
    members = {part: {b"fine_labels": [n * 10 + 1] * n, b"coarse_labels": [n] * n,
                      b"data": RNG.integers(0, 256, (n, 3072), dtype=np.uint8)} for part, n in [("train", 3),
                                                                                                 ("test", 2)]}
    cifar_archive(served / "cifar-100-python.tar.gz", "cifar-100-python", members)
    monkeypatch.setattr(datasets.cifar100, "SHA256", sha256(served / "cifar-100-python.tar.gz"))
    (x_train, fine), (_, fine_test) = datasets.cifar100.load_data()
    (_, coarse), _ = datasets.cifar100.load_data(label_mode="coarse")
    assert x_train.shape == (3, 32, 32, 3) and fine.shape == (3, 1) and fine[0, 0] == 31 and fine_test[0, 0] == 21
    assert coarse[:, 0].tolist() == [3, 3, 3]
    with pytest.raises(ValueError, match="label_mode must be 'fine'.*'coarse'.*got 'medium'"):
        datasets.cifar100.load_data(label_mode="medium")


class Planted:
    """A pickle payload that would write a file when unpickled by a plain unpickler."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_a_tampered_cifar_pickle_is_refused_before_anything_runs(server, monkeypatch, tmp_path):
    served, _ = server
    target = tmp_path / "pwned.txt"
    batches = {f"data_batch_{i}": {b"labels": [0], b"data": np.zeros((1, 3072), np.uint8)} for i in range(1, 6)}
    batches["test_batch"] = {b"labels": [0], b"data": Planted(str(target))}
    cifar_archive(served / "cifar-10-python.tar.gz", "cifar-10-batches-py", batches)
    monkeypatch.setattr(datasets.cifar10, "SHA256", sha256(served / "cifar-10-python.tar.gz"))
    with pytest.raises(pickle.UnpicklingError, match="refusing to load (builtins|io).open from a dataset file"):
        datasets.cifar10.load_data()
    assert not target.exists()


def ragged(rows):
    out = np.empty(len(rows), dtype=object)
    for i, r in enumerate(rows):
        out[i] = list(r)
    return out


def test_imdb_sequences_follow_keras_index_conventions(server, monkeypatch):
    served, _ = server
    x_train = ragged([[1, 2, 3], [4, 5], [6, 7, 8, 9]])
    x_test = ragged([[1, 9], [2]])
    serve_npz(served, "imdb.npz", datasets.imdb, monkeypatch, x_train=x_train, y_train=np.array([1, 0, 1]),
              x_test=x_test, y_test=np.array([0, 1]))
    (xt, yt), (xs, ys) = datasets.imdb.load_data(seed=113)
    order = np.arange(3)
    np.random.RandomState(113).shuffle(order)          # Keras' shuffle of the training split
    assert yt.tolist() == [[1, 0, 1][i] for i in order]
    assert xt.dtype == object and xt.shape == (3,)
    first = list(x_train[order[0]])
    # 1 marks the start, words shift by index_from=3; without num_words the largest index (12) is out of range
    assert xt[0] == [1] + [w + 3 if w + 3 < 12 else 2 for w in first]
    (xt, _), _ = datasets.imdb.load_data(num_words=6, start_char=None, oov_char=None, index_from=0)
    assert sorted(map(len, xt)) == [0, 2, 3]           # only the words 0..5 are kept when oov_char is None
    (xt, _), (xs, _) = datasets.imdb.load_data(maxlen=3)
    assert sorted(map(len, xt)) == [3] and sorted(map(len, xs)) == [2, 3]     # kept: fewer than 3 words
    with pytest.raises(TypeError, match="unknown arguments \\['nb_words'\\]"):
        datasets.imdb.load_data(nb_words=10)


def test_a_tampered_object_array_in_an_npz_is_refused(server, monkeypatch, tmp_path):
    served, _ = server
    target = tmp_path / "pwned.txt"
    evil = np.empty(1, dtype=object)
    evil[0] = Planted(str(target))
    serve_npz(served, "reuters.npz", datasets.reuters, monkeypatch, x=evil, y=np.array([0]))
    with pytest.raises(pickle.UnpicklingError, match="refusing to load"):
        datasets.reuters.load_data()
    assert not target.exists()


def test_reuters_splits_by_test_split_after_keras_shuffle(server, monkeypatch):
    served, _ = server
    serve_npz(served, "reuters.npz", datasets.reuters, monkeypatch, x=ragged([[i, i + 1] for i in range(10)]),
              y=np.arange(10) % 46)
    (xt, yt), (xs, ys) = datasets.reuters.load_data(test_split=0.3)
    order = np.arange(10)
    np.random.RandomState(113).shuffle(order)
    assert yt.tolist() == order[:7].tolist() and ys.tolist() == order[7:].tolist()
    assert len(xt) == 7 and xt[0][0] == 1 and datasets.reuters.get_label_names()[3] == "earn"
    with pytest.raises(ValueError, match="test_split is the fraction.*got 1.5"):
        datasets.reuters.load_data(test_split=1.5)


@pytest.mark.parametrize("module, features", [(datasets.boston_housing, 13), (datasets.california_housing, 8)])
def test_housing_splits_shuffled_features_and_targets_together(server, monkeypatch, module, features):
    served, _ = server
    x = np.arange(20 * features, dtype=np.float64).reshape(20, features)
    y = x[:, 0] * 10.0                                  # the target can be read off the row
    serve_npz(served, os.path.basename(module.URL), module, monkeypatch, x=x, y=y)
    (xt, yt), (xs, ys) = module.load_data(test_split=0.25, seed=1)
    assert xt.shape == (15, features) and xs.shape == (5, features) and yt.shape == (15,)
    assert np.array_equal(yt, xt[:, 0] * 10) and np.array_equal(ys, xs[:, 0] * 10)
    order = np.arange(20)
    np.random.RandomState(1).shuffle(order)
    assert np.array_equal(xt[:, 0], x[order[:15], 0])


def test_california_small_version_keeps_the_first_600(server, monkeypatch):
    served, _ = server
    x = np.arange(700 * 8, dtype=np.float64).reshape(700, 8)
    serve_npz(served, "california_housing.npz", datasets.california_housing, monkeypatch, x=x, y=x[:, 0])
    (xt, _), (xs, _) = datasets.california_housing.load_data(version="small")
    assert len(xt) == 480 and len(xs) == 120 and max(xt[:, 0].max(), xs[:, 0].max()) < 600 * 8
    with pytest.raises(ValueError, match="version must be 'small'.*got 'medium'"):
        datasets.california_housing.load_data(version="medium")


def test_word_index_uses_keras_md5_checksums(server, monkeypatch):
    served, requests = server
    (served / "imdb_word_index.json").write_text('{"the": 1, "and": 2}')
    monkeypatch.setattr(datasets.imdb, "WORD_INDEX_MD5",
                        hashlib.md5((served / "imdb_word_index.json").read_bytes()).hexdigest())
    assert datasets.imdb.get_word_index() == {"the": 1, "and": 2}
    assert datasets.imdb.get_word_index() == {"the": 1, "and": 2} and requests == ["/imdb_word_index.json"]


def test_a_server_error_is_reported_with_the_url_and_leaves_nothing_behind(server, tmp_path):
    served, requests = server                     # nothing is served: the server answers 404
    with pytest.raises(datasets.DownloadError, match=r"boston_housing.load_data: could not download "
                                                     r"http://127.0.0.1:\d+/boston_housing.npz \(File not found\)"):
        datasets.boston_housing.load_data()
    assert requests == ["/boston_housing.npz"] and list((tmp_path / "cache").iterdir()) == []
