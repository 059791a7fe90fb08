"""``toolgauge data pull`` in real processes against a loopback mirror (``TOOLGAUGE_DATA_MIRROR``).

Each case asserts what is on disk afterwards: a good pull leaves exactly the verified files; a refused,
cut-short, interrupted or disk-full pull leaves no revision folder and no temporary folder, and a cache that
was there stays intact. The mirror serves the shared MTU-Bench files at GitHub's raw paths.
"""

from __future__ import annotations

import json
import queue
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers.data_mirror import DataMirror, cache_listing, cli, cli_env, github_path, github_routes, start_cli
from toolgauge.datasets.registry import dataset_named
from toolgauge.datasets.verify import digests

MTU = dataset_named("mtu-bench")
assert MTU is not None
MTU_FILES = sorted(MTU.pins)
DEADLINE = 120.0


@pytest.fixture()
def mirror(data_dir: Path):
    with DataMirror(github_routes("mtu-bench", data_dir)) as server:
        yield server


def revision_files(cache: Path) -> list[str]:
    return sorted(p.name for p in (cache / "mtu-bench" / MTU.revision).iterdir())


def assert_nothing_kept(cache: Path) -> None:
    """No revision folder and no temporary folder: only the lock file may be left."""
    assert cache_listing(cache) in ([], ["mtu-bench"], ["mtu-bench", "mtu-bench/.lock"])


def test_a_good_pull_keeps_exactly_the_verified_files(tmp_path, mirror, data_dir):
    env = cli_env(tmp_path / "cache", mirror.url)
    done = cli("data", "pull", "mtu-bench", env=env)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "cache" / "mtu-bench" / "d0811f8"
    assert str(folder) in done.stdout
    assert revision_files(tmp_path / "cache") == sorted([*MTU_FILES, ".toolgauge-data.json"])
    for name in MTU_FILES:  # the same bytes as the shared copy, and as pinned
        assert (folder / name).read_bytes() == (data_dir / "mtu-bench" / name).read_bytes()
        assert digests(folder / name).sha256 == MTU.pins[name].sha256
    manifest = json.loads((folder / ".toolgauge-data.json").read_text())
    assert manifest["files"] == {name: MTU.pins[name].sha256 for name in MTU_FILES}
    assert not [p for p in (tmp_path / "cache" / "mtu-bench").iterdir() if p.name.startswith(".pull-")]

    assert cli("data", "verify", "mtu-bench", env=env).returncode == 0
    path = cli("data", "path", "mtu-bench", env=env)
    assert path.returncode == 0 and path.stdout.strip() == str(folder)
    listed = json.loads(cli("data", "list", "--json", env=env).stdout)
    cached = {d["name"]: d["cached"] for d in listed["datasets"]}
    assert cached["mtu-bench"] is True and cached["bfcl"] is False

    again = cli("data", "pull", "mtu-bench", env=env)  # cached: no request at all
    assert again.returncode == 0 and "already cached" in again.stdout
    assert mirror.requests[github_path("mtu-bench", "S-S_eval.jsonl")] == 1


def test_verify_finds_a_changed_file(tmp_path, mirror):
    env = cli_env(tmp_path / "cache", mirror.url)
    assert cli("data", "pull", "mtu-bench", env=env).returncode == 0
    target = tmp_path / "cache" / "mtu-bench" / "d0811f8" / "OOD_eval.jsonl"
    target.write_bytes(target.read_bytes()[:-10])
    checked = cli("data", "verify", "mtu-bench", env=env)
    assert checked.returncode == 1
    assert "OOD_eval.jsonl" in checked.stderr and "pull mtu-bench --force" in checked.stderr


def test_a_hash_mismatch_is_refused_and_the_cache_is_untouched(tmp_path, mirror):
    env = cli_env(tmp_path / "cache", mirror.url)
    path = github_path("mtu-bench", "S-M_eval.jsonl")
    good = mirror.routes[path]
    mirror.routes[path] = good.replace(b'"', b"'", 1)  # same size, other bytes
    refused = cli("data", "pull", "mtu-bench", env=env)
    assert refused.returncode == 2
    assert "S-M_eval.jsonl: sha256" in refused.stderr and "refused" in refused.stderr
    assert_nothing_kept(tmp_path / "cache")

    # A good copy is in the cache: a --force pull of bad bytes leaves it as it was.
    mirror.routes[path] = good
    assert cli("data", "pull", "mtu-bench", env=env).returncode == 0
    before = {n: digests(tmp_path / "cache" / "mtu-bench" / "d0811f8" / n).sha256 for n in MTU_FILES}
    mirror.routes[path] = good.replace(b'"', b"'", 1)
    assert cli("data", "pull", "mtu-bench", "--force", env=env).returncode == 2
    after = {n: digests(tmp_path / "cache" / "mtu-bench" / "d0811f8" / n).sha256 for n in MTU_FILES}
    assert after == before
    assert cli("data", "verify", env=env).returncode == 0
    assert not [p for p in (tmp_path / "cache" / "mtu-bench").iterdir() if p.name.startswith(".pull-")]


def test_a_truncated_download_is_refused(tmp_path, mirror):
    env = cli_env(tmp_path / "cache", mirror.url)
    mirror.faults[github_path("mtu-bench", "M-M_eval.jsonl")] = "truncate"
    cut = cli("data", "pull", "mtu-bench", env=env)
    assert cut.returncode == 75
    assert "M-M_eval.jsonl" in cut.stderr and "closed before the whole file arrived" in cut.stderr
    assert "Traceback" not in cut.stderr
    assert_nothing_kept(tmp_path / "cache")


def test_a_404_names_the_url_and_keeps_nothing(tmp_path, mirror):
    env = cli_env(tmp_path / "cache", mirror.url)
    mirror.faults[github_path("mtu-bench", "LICENSE")] = "404"
    missing = cli("data", "pull", "mtu-bench", env=env)
    assert missing.returncode == 2
    assert "HTTP 404" in missing.stderr and "MTU-Bench-Team/MTU-Bench/d0811f8" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    assert_nothing_kept(tmp_path / "cache")


def test_a_stalled_server_times_out_with_one_clear_line(tmp_path, mirror):
    # The mirror never answers this file: the client's own timeout (1 s) is what this test is about.
    env = cli_env(tmp_path / "cache", mirror.url)
    mirror.faults[github_path("mtu-bench", "S-S_eval.jsonl")] = "stall"
    stalled = cli("data", "pull", "mtu-bench", "--timeout", "1", env=env)
    assert stalled.returncode == 75
    assert "no answer for 1 s" in stalled.stderr and "S-S_eval.jsonl" in stalled.stderr
    assert_nothing_kept(tmp_path / "cache")


def test_a_pull_without_accept_terms_of_an_unlicensed_dataset_fetches_nothing(tmp_path, data_dir):
    routes = {github_path("wildtoolbench", "Wild-Tool-Bench.jsonl"): b"{}\n"}
    with DataMirror(routes) as server:
        env = cli_env(tmp_path / "cache", server.url)
        refused = cli("data", "pull", "wildtoolbench", env=env)
        assert refused.returncode == 2 and "--accept-terms" in refused.stderr and "no license" in refused.stderr
        assert sum(server.requests.values()) == 0
        # With the terms accepted it is fetched, and these bytes are not the pinned git blob: refused.
        wrong = cli("data", "pull", "wildtoolbench", "--accept-terms", env=env)
        assert wrong.returncode == 2 and "git blob" in wrong.stderr
    assert cache_listing(tmp_path / "cache") == ["wildtoolbench", "wildtoolbench/.lock"]


def test_the_tool_genesis_subset_is_not_the_pinned_full_file(tmp_path, data_dir):
    subset = (data_dir / "tool-genesis" / "tool_genesis_v3_subset.json").read_bytes()
    routes = {
        github_path("tool-genesis", "tool_genesis_v3.json"): subset,
        github_path("tool-genesis", "LICENSE"): (data_dir / "tool-genesis" / "LICENSE").read_bytes(),
    }
    with DataMirror(routes) as server:
        refused = cli("data", "pull", "tool-genesis", env=cli_env(tmp_path / "cache", server.url))
    assert refused.returncode == 2 and "tool_genesis_v3.json: git blob" in refused.stderr
    assert cache_listing(tmp_path / "cache") == ["tool-genesis", "tool-genesis/.lock"]


def _lines(stream) -> queue.Queue[str]:
    """The lines of a child's pipe as they come (a reader thread), so a test can wait on one with a deadline."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    return lines


def _wait_for_line(lines: queue.Queue[str], text: str) -> str:
    while True:
        line = lines.get(timeout=DEADLINE)  # queue.Empty past the deadline fails the test
        if text in line:
            return line


def test_two_pulls_at_once_the_second_waits_then_finds_it_cached(tmp_path, mirror):
    env = cli_env(tmp_path / "cache", mirror.url)
    gated = github_path("mtu-bench", "S-S_eval.jsonl")
    mirror.faults[gated] = "gate"
    first = start_cli("data", "pull", "mtu-bench", env=env)
    second = None
    try:
        assert mirror.gate_reached.wait(DEADLINE), "the first pull never reached the mirror"
        second = start_cli("data", "pull", "mtu-bench", env=env)
        _wait_for_line(_lines(second.stderr), "another pull of this dataset is running")
        assert second.poll() is None  # it waits on the lock; nothing is in place yet
        assert not (tmp_path / "cache" / "mtu-bench" / "d0811f8").exists()
        mirror.release()
        assert first.wait(DEADLINE) == 0
        out, _ = second.communicate(timeout=DEADLINE)
        assert second.returncode == 0 and "already cached" in out
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(DEADLINE)
    assert mirror.requests[gated] == 1  # the second pull made no request
    assert cli("data", "verify", "mtu-bench", env=env).returncode == 0


def test_ctrl_c_mid_pull_leaves_nothing_and_the_next_pull_completes(tmp_path, mirror):
    env = cli_env(tmp_path / "cache", mirror.url)
    gated = github_path("mtu-bench", "M-S_eval.jsonl")
    mirror.faults[gated] = "gate"
    child = start_cli("data", "pull", "mtu-bench", env=env)
    try:
        assert mirror.gate_reached.wait(DEADLINE), "the pull never reached the mirror"
        # Part of the file is on disk in the temporary folder right now.
        assert [p for p in (tmp_path / "cache" / "mtu-bench").iterdir() if p.name.startswith(".pull-")]
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=DEADLINE)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(DEADLINE)
    assert child.returncode == 130, err
    assert "Traceback" not in err
    assert_nothing_kept(tmp_path / "cache")

    del mirror.faults[gated]
    mirror.release()
    assert cli("data", "pull", "mtu-bench", env=env).returncode == 0
    assert revision_files(tmp_path / "cache") == sorted([*MTU_FILES, ".toolgauge-data.json"])
    assert cli("data", "verify", "mtu-bench", env=env).returncode == 0


DISK_SCRIPT = """
set -u
mount -t tmpfs -o size=2m tmpfs "$CACHE" || exit 77
"$PY" -m toolgauge.cli data pull mtu-bench > "$OUT/stdout" 2> "$OUT/stderr"
echo $? > "$OUT/rc"
(cd "$CACHE" && find . | sort) > "$OUT/listing"
"""


def test_a_full_disk_keeps_nothing_and_says_so(tmp_path, mirror):
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed: no private tmpfs to fill")
    probe = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "true"], capture_output=True, text=True, timeout=30
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private mount namespace for a small tmpfs: {probe.stderr.strip()}")
    cache, out = tmp_path / "cache", tmp_path / "out"
    cache.mkdir()
    out.mkdir()
    env = {**cli_env(cache, mirror.url), "CACHE": str(cache), "OUT": str(out), "PY": sys.executable}
    run = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", DISK_SCRIPT], env=env, timeout=DEADLINE,
        capture_output=True, text=True,
    )  # fmt: skip
    if run.returncode == 77:
        pytest.skip(f"cannot mount a tmpfs: {run.stderr.strip()}")
    assert (out / "rc").read_text().strip() == "75", (out / "stderr").read_text()
    stderr = (out / "stderr").read_text()
    assert "no space left" in stderr and "Traceback" not in stderr
    assert (out / "listing").read_text().split() == [".", "./mtu-bench", "./mtu-bench/.lock"]
