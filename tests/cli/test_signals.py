"""SIGTERM and SIGINT inside a command's event loop (toolgauge.cli.event_loop), in-process and on the viewer.

The in-process tests signal this very process: each signal is sent from inside the loop once the state it needs
is reached (the main task is waiting), never after a sleep. The CLI runs that are stopped by signals are in
test_cli_faults.py, test_cli_interrupt.py and test_sweep_local.py (interactive and background variants).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from helpers.child_process import LineReader, sigint_ignored, sigint_restored
from helpers.paths import SRC
from toolgauge.cli.event_loop import run_interruptible

# The CLI children import the toolgauge the test runs with (a checkout's src first, as PYTHONPATH gives it).
PYTHONPATH = os.environ.get("PYTHONPATH", str(SRC))


class Stopped(Exception):
    """What a command raises when it was cancelled: stopped, resumable."""


@pytest.fixture()
def handlers() -> Iterator[None]:
    """The test may change this process's SIGINT: put both handlers back afterwards."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGINT, before[0])
    signal.signal(signal.SIGTERM, before[1])


async def stops_on_cancel(signals: int = 1) -> None:
    """Send this process ``signals`` SIGTERMs once waiting; on cancellation raise :class:`Stopped`."""
    loop = asyncio.get_running_loop()
    for _ in range(signals):
        loop.call_soon(os.kill, os.getpid(), signal.SIGTERM)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        raise Stopped from None


def test_sigterm_cancels_the_main_task_and_its_stopped_error_is_raised(handlers: None):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stopped):
        run_interruptible(stops_on_cancel(), stopped=(Stopped,))
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_sigint_inherited_as_ignored_stays_ignored_and_sigterm_still_stops(handlers: None):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    seen: list[object] = []

    async def main() -> None:
        seen.append(signal.getsignal(signal.SIGINT))
        os.kill(os.getpid(), signal.SIGINT)  # ignored: nothing happens
        await asyncio.sleep(0)
        await stops_on_cancel()

    with pytest.raises(Stopped):
        run_interruptible(main(), stopped=(Stopped,))
    assert seen == [signal.SIG_IGN]
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_ctrl_c_cancels_the_main_task_like_sigterm(handlers: None):
    signal.signal(signal.SIGINT, signal.default_int_handler)

    async def main() -> None:
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGINT)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise Stopped from None

    with pytest.raises(Stopped):
        run_interruptible(main(), stopped=(Stopped,))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_cancellation_the_command_lets_through_is_a_keyboard_interrupt(handlers: None):
    async def main() -> None:
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)
        await asyncio.Event().wait()

    with pytest.raises(KeyboardInterrupt):
        run_interruptible(main(), stopped=(Stopped,))


def test_a_second_signal_interrupts_a_slow_shutdown_and_the_stopped_error_is_kept(handlers: None):
    """The first SIGTERM cancels; the clean-up of a helper task waits, and the second raises KeyboardInterrupt."""
    cleaning = threading.Event()

    async def helper() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise Stopped from None

    async def main() -> None:
        task = asyncio.create_task(helper())
        await asyncio.sleep(0)
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cleaning.set()
            os.kill(os.getpid(), signal.SIGTERM)  # the second signal, during this clean-up
            await task  # never reached: the KeyboardInterrupt ends the loop first

    with pytest.raises(Stopped):
        run_interruptible(main(), stopped=(Stopped,))
    assert cleaning.is_set()


async def second_signal_in_cleanup(then: Callable[[], None]) -> None:
    """SIGTERM once waiting; while cleaning up after the cancellation, a second; ``then`` handles its interrupt."""
    asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except KeyboardInterrupt:
            then()
            raise
        raise


def test_a_third_signal_during_the_shutdown_is_ignored(handlers: None):
    def third() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # no second KeyboardInterrupt inside this handler
        raise Stopped

    with pytest.raises(Stopped):
        run_interruptible(second_signal_in_cleanup(third), stopped=(Stopped,))


def test_after_a_second_signal_what_code_logs_of_it_is_not_printed(handlers: None, caplog: pytest.LogCaptureFixture):
    """Library code that catches the KeyboardInterrupt and logs it (SQLAlchemy's pool does) prints no traceback."""
    hooks = sys.unraisablehook, threading.excepthook

    def log_it() -> None:
        logging.getLogger("a.pool").error("Exception closing connection", exc_info=True)

    with caplog.at_level("ERROR"), pytest.raises(KeyboardInterrupt):
        run_interruptible(second_signal_in_cleanup(log_it), stopped=(Stopped,))
    assert [r.getMessage() for r in caplog.records] == []
    # Muted only while the command stops: reporting is back afterwards.
    assert logging.root.manager.disable == logging.NOTSET and (sys.unraisablehook, threading.excepthook) == hooks
    logging.getLogger("a.pool").error("reported again")
    assert [r.getMessage() for r in caplog.records] == ["reported again"]


def test_on_stop_replaces_the_cancellation(handlers: None):
    async def main() -> str:
        done = asyncio.Event()
        asyncio.get_running_loop().call_soon(os.kill, os.getpid(), signal.SIGTERM)
        stopping.append(done)
        await done.wait()
        return "shut down"

    stopping: list[asyncio.Event] = []
    assert run_interruptible(main(), stopped=(), on_stop=lambda: stopping[0].set()) == "shut down"


def test_outside_the_main_thread_no_handler_is_installed(handlers: None):
    before = signal.getsignal(signal.SIGTERM)
    seen: list[object] = []

    async def main() -> int:
        seen.append(signal.getsignal(signal.SIGTERM))
        return 7

    results: list[int] = []
    worker = threading.Thread(target=lambda: results.append(run_interruptible(main(), stopped=())))
    worker.start()
    worker.join(timeout=60)
    assert results == [7] and seen == [before]


# -- the viewer ----------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sigint", "stop"),
    [(sigint_ignored, signal.SIGTERM), (sigint_restored, signal.SIGTERM), (sigint_restored, signal.SIGINT)],
    ids=["background-sigterm", "interactive-sigterm", "ctrl-c"],
)
def test_the_viewer_shuts_down_cleanly_on_a_signal(tmp_path: Path, sigint: object, stop: signal.Signals):
    from helpers.view_runs import view_missing

    missing = view_missing(browser=False)
    if missing is not None:
        pytest.skip(missing)
    store = f"sqlite:///{tmp_path / 's.db'}"
    made = subprocess.run(
        [sys.executable, "-m", "toolgauge.cli", "eval", "suite", "--model", "gold", "--limit", "1", "-q",
         "--store", store],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": PYTHONPATH},
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolgauge.cli", "view", "--store", store, "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": PYTHONPATH},
        preexec_fn=sigint,  # type: ignore[arg-type]
    )  # fmt: skip
    try:
        assert proc.stderr is not None and proc.stdout is not None
        stderr = LineReader(proc.stderr)
        [started] = stderr.until(lambda line: "toolgauge view: " in line, timeout=120)
        assert re.fullmatch(r"toolgauge view: http://127\.0\.0\.1:\d+/  \(Ctrl-C stops it\)\n", started)
        proc.send_signal(stop)
        rest = stderr.rest(timeout=60)
        assert proc.wait(timeout=60) == 0, rest
        assert rest == ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)


# -- worker threads at exit ----------------------------------------------------------------------------------


def test_join_worker_threads_waits_for_every_started_thread_and_says_when_one_outlives_the_wait():
    from toolgauge.worker_threads import join_worker_threads, start_worker_thread

    release = threading.Event()
    thread = start_worker_thread(lambda: release.wait(60), name="toolgauge-test-worker")
    assert join_worker_threads(0.05) is False and thread.is_alive()
    release.set()
    assert join_worker_threads(60) is True and not thread.is_alive()


# The CLI with a worker thread that never ends, started by a command that then returns.
STUCK_WORKER_CLI = """
import sys, threading
import toolgauge.cli as cli
from toolgauge.worker_threads import start_worker_thread
cli.WORKER_EXIT_WAIT_SECONDS = 0.2
start_worker_thread(threading.Event().wait, name="toolgauge-stuck")
sys.argv[0] = "toolgauge"
cli.main()
"""


@pytest.mark.slow
def test_a_worker_thread_that_outlives_the_wait_does_not_change_the_exit_code():
    done = subprocess.run(
        [sys.executable, "-c", STUCK_WORKER_CLI, "runs", "--store", "sqlite:////nonexistent/x.db"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == "error: no store at /nonexistent/x.db; run an eval first\n"
