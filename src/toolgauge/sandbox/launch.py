"""The sandbox trampoline: the first process of every sandboxed command.

Run as ``python -I -S .../launch.py --kind KIND --limits JSON --workdir DIR [--bind PATH]... -- argv...``.
It applies the resource limits, starts a new session, clears the environment, then replaces itself
(``exec``) with bubblewrap, ``unshare`` or the program itself. Because all of this happens inside the child,
the command line works both under :mod:`subprocess` and as the ``command`` of MCP's ``stdio_client``, which
cannot take a ``preexec_fn``.

This file imports only the standard library and is run by path with ``-I -S``: a launch must not pay for
importing pydantic or the rest of toolgauge.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import stat
import sys
from collections.abc import Sequence

# The fixed path of the private workdir inside bubblewrap.
SANDBOX_DIR = "/sandbox"
# Exit code of the trampoline itself when it cannot set the sandbox up (the program never started).
SETUP_FAILED = 125
SETUP_PREFIX = "toolgauge sandbox:"
# Each sandbox launched by root runs as its own unprivileged uid, so that RLIMIT_NPROC (counted per uid)
# of one sandbox cannot starve another running at the same time.
UID_BASE = 200_000
# A workdir is copied file by file into the sandbox's tmpfs; generated servers hold a handful of files.
MAX_WORKDIR_ENTRIES = 200
SYSTEM_DIRS = ("/usr",)
SYSTEM_LINKS_OR_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The dynamic loader needs its cache to find multiarch libraries (libffi, libssl...) of extension modules.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
# Private, size-capped tmpfs over the usual world-writable places.
PRIVATE_TMPFS = ("/tmp", "/var/tmp", "/dev/shm")
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
MB = 1024 * 1024


class SetupError(Exception):
    """The sandbox could not be set up; the message is shown to the caller."""


def sandbox_env(home: str) -> dict[str, str]:
    """Return the whole environment of a sandboxed program (everything else is dropped)."""
    return {
        "PATH": SAFE_PATH,
        "HOME": home,
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def apply_rlimits(limits: dict[str, float]) -> None:
    """Set the per-process resource limits (inherited by everything started afterwards)."""
    cpu = int(limits["cpu_seconds"])
    # The soft limit sends SIGXCPU (a clear reason); the hard one, a second later, SIGKILLs a program ignoring it.
    _, cpu_hard = resource.getrlimit(resource.RLIMIT_CPU)
    cpu_hard = cpu + 1 if cpu_hard == resource.RLIM_INFINITY else min(cpu + 1, cpu_hard)
    resource.setrlimit(resource.RLIMIT_CPU, (min(cpu, cpu_hard), cpu_hard))
    pairs = [
        (resource.RLIMIT_AS, int(limits["memory_mb"]) * MB),
        (resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * MB),
        (resource.RLIMIT_NOFILE, int(limits["open_files"])),
        (resource.RLIMIT_NPROC, int(limits["processes"])),
        (resource.RLIMIT_CORE, 0),
    ]
    for which, value in pairs:
        _, hard = resource.getrlimit(which)
        # An unprivileged caller cannot raise a hard limit: keep the lower of the two.
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))


def new_session() -> None:
    """Become a session (and process group) leader, so the caller can kill the whole group."""
    # EPERM: already a leader, the caller started us with start_new_session=True.
    with contextlib.suppress(OSError):
        os.setsid()


def accessible_to_others(path: str) -> bool:
    """Tell whether a uid that is neither owner nor group can read and execute ``path`` (and reach it)."""
    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return False
    if not (mode & stat.S_IROTH and mode & stat.S_IXOTH):
        return False
    parent = os.path.dirname(real)
    while True:
        try:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
        if parent == "/":
            return True
        parent = os.path.dirname(parent)


def drop_stage(uid: int | None, *, reap: bool = False) -> list[str]:
    """Return a command prefix that drops to ``uid`` (no groups) and then execs the rest of argv.

    With ``reap`` the stage stays as the parent (pid 1 of ``unshare``'s pid namespace): it runs the program
    as its child and reports a death by signal N as exit code 128 + N, as bubblewrap does, because
    ``unshare`` itself loses that status.
    """
    drop = "" if uid is None else f"os.setgroups([]);os.setgid({uid});os.setuid({uid});"
    # execv, not execvp: execvp imports modules, and the stdlib may be unreadable once the uid is dropped.
    run = drop + "p=sys.argv[1];(os.execv if '/' in p else os.execvp)(p,sys.argv[1:])"
    if reap:
        code = (
            "import os,sys\n"
            "pid=os.fork()\n"
            "if pid==0:\n"
            f" {run}\n"
            "s=os.waitpid(pid,0)[1]\n"
            "os._exit(128+os.WTERMSIG(s) if os.WIFSIGNALED(s) else os.WEXITSTATUS(s))\n"
        )
    else:
        code = "import os,sys;" + run
    return [sys.executable, "-I", "-S", "-c", code]


def copy_workdir_args(workdir: str) -> list[str]:
    """Return bwrap arguments that fill the private tmpfs ``/sandbox`` with copies of ``workdir``'s files.

    Symlinks and special files are skipped: a link could point at a host file outside the workdir. A hard
    link is refused outright (:class:`SetupError`).
    """
    args: list[str] = []
    count = 0
    for root, dirs, files in os.walk(workdir):
        rel_root = os.path.relpath(root, workdir)
        dest_root = SANDBOX_DIR if rel_root == "." else os.path.join(SANDBOX_DIR, rel_root)
        for name in sorted(dirs):
            if os.path.islink(os.path.join(root, name)):
                continue
            count += 1
            args += ["--perms", "0777", "--dir", os.path.join(dest_root, name)]
        dirs[:] = [d for d in sorted(dirs) if not os.path.islink(os.path.join(root, d))]
        for name in sorted(files):
            source = os.path.join(root, name)
            try:
                fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a symlink (O_NOFOLLOW) or unreadable entry
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                os.close(fd)
                continue
            if info.st_nlink > 1:
                # A hard link shares its inode with a file elsewhere on the host (it could be /etc/shadow).
                os.close(fd)
                raise SetupError(f"{source} is a hard link (link count {info.st_nlink}); refusing to copy it")
            count += 1
            os.set_inheritable(fd, True)
            args += ["--perms", "0666", "--file", str(fd), os.path.join(dest_root, name)]
        if count > MAX_WORKDIR_ENTRIES:
            raise SetupError(f"workdir {workdir} holds more than {MAX_WORKDIR_ENTRIES} entries")
    return args


def workdir_bytes(workdir: str) -> int:
    """Return the total size of the regular files under ``workdir``."""
    total = 0
    for root, _dirs, files in os.walk(workdir):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                with contextlib.suppress(OSError):
                    total += os.stat(path).st_size
    return total


def ancestors(path: str) -> list[str]:
    """Return the ancestors of an absolute path, shortest first, without ``/``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_command(
    bwrap: str, argv: Sequence[str], workdir: str, binds: Sequence[str], limits: dict[str, float], uid: int | None
) -> list[str]:
    """Return the bubblewrap command line that runs ``argv`` in the sandbox.

    As root (``uid`` given) bwrap runs privileged without a user namespace and a drop stage switches to the
    unprivileged ``uid`` inside; as a normal user bwrap creates a user namespace instead.
    """
    cmd = [bwrap, "--die-with-parent", "--new-session"]
    if uid is not None:
        # No user namespace: inside one, the sandbox uid would map back to host root, which RLIMIT_NPROC ignores.
        cmd += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        cmd += ["--unshare-all"]
    for path in SYSTEM_DIRS:
        cmd += ["--ro-bind", path, path]
    for path in SYSTEM_LINKS_OR_DIRS:
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    for path in ETC_FILES:
        if os.path.exists(path):
            cmd += ["--ro-bind", path, path]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    scratch = str(int(limits["file_size_mb"]) * MB)
    # Every world-writable scratch place of a host is a private tmpfs here: nothing written there reaches the host.
    for path in PRIVATE_TMPFS:
        # Sticky and world-writable like the host's, so the unprivileged sandbox uid can use its own copy.
        cmd += ["--size", scratch, "--tmpfs", path, "--chmod", "1777", path]
    # Parents of the read-only binds (the interpreter may live under /root) are created world-traversable.
    made: set[str] = set()
    for path in sorted(set(binds)):
        for parent in ancestors(path):
            if parent not in made:
                made.add(parent)
                cmd += ["--perms", "0755", "--dir", parent]
        cmd += ["--ro-bind", path, path]
    room = workdir_bytes(workdir) + int(limits["file_size_mb"]) * MB
    cmd += ["--size", str(room), "--tmpfs", SANDBOX_DIR]
    cmd += copy_workdir_args(workdir)
    cmd += ["--chmod", "1777", SANDBOX_DIR, "--chdir", SANDBOX_DIR]
    # The new root is itself a tmpfs (holding /etc, /root... as mount points): make it read-only too.
    cmd += ["--remount-ro", "/", "--"]
    if uid is not None:
        cmd += drop_stage(uid)
    return cmd + list(argv)


def unshare_command(unshare: str, argv: Sequence[str], uid: int | None, as_root: bool) -> list[str]:
    """Return the ``unshare`` command line (new network, pid and mount namespaces) that runs ``argv``."""
    cmd = [unshare]
    if not as_root:
        cmd += ["--user", "--map-root-user"]
    cmd += ["--net", "--pid", "--fork", "--kill-child", "--mount-proc", "--"]
    return cmd + drop_stage(uid, reap=True) + list(argv)


def plan(
    kind: str,
    argv: Sequence[str],
    workdir: str,
    binds: Sequence[str],
    limits: dict[str, float],
    *,
    userns: bool = False,
) -> list[str]:
    """Return the command to exec and say on stderr when the uid drop is skipped.

    ``userns`` makes a root caller run bubblewrap in a user namespace too (for hosts where root may not
    create mount namespaces directly, such as a default Docker container); the uid is then not dropped.
    """
    as_root = os.geteuid() == 0
    uid = UID_BASE + os.getpid() if as_root and not (kind == "bwrap" and userns) else None
    argv = [shutil.which(argv[0], path=SAFE_PATH) or argv[0], *argv[1:]]
    if kind == "bwrap":
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SetupError("bwrap not found")
        return bwrap_command(bwrap, argv, workdir, binds, limits, uid)
    if uid is not None:
        # Without bind mounts the unprivileged uid sees the host's files: it must be able to run the program.
        for needed in (argv[0], workdir):
            if not accessible_to_others(needed):
                print(
                    f"{SETUP_PREFIX} {needed} is not readable by an unprivileged uid; running as root "
                    "(the process limit is not enforced)",
                    file=sys.stderr,
                )
                uid = None
                break
    if kind == "namespaces":
        unshare = shutil.which("unshare")
        if unshare is None:
            raise SetupError("unshare not found")
        return unshare_command(unshare, argv, uid, as_root)
    if uid is not None:
        return [*drop_stage(uid), *argv]
    return list(argv)


def parse(args: Sequence[str]) -> argparse.Namespace:
    """Parse the trampoline's own options (everything before ``--``)."""
    parser = argparse.ArgumentParser(prog="toolgauge-sandbox-launch")
    parser.add_argument("--kind", choices=["bwrap", "namespaces", "rlimits"], required=True)
    parser.add_argument("--limits", required=True, help="SandboxLimits as JSON")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--bind", action="append", default=[], help="a path bound read-only at the same place")
    parser.add_argument("--userns", action="store_true", help="bwrap in a user namespace even as root")
    parser.add_argument("--pidfile", help="write this process's pid (the sandbox's process group) here")
    return parser.parse_args(args)


def main(args: Sequence[str]) -> int:
    """Set the sandbox up and exec the program; return an exit code only when that fails."""
    if "--" not in args:
        print(f"{SETUP_PREFIX} usage: launch.py OPTIONS -- argv...", file=sys.stderr)
        return SETUP_FAILED
    split = list(args).index("--")
    options, argv = parse(args[:split]), list(args[split + 1 :])
    if not argv:
        print(f"{SETUP_PREFIX} no program given", file=sys.stderr)
        return SETUP_FAILED
    try:
        limits = json.loads(options.limits)
        workdir = os.path.realpath(options.workdir)
        if not os.path.isdir(workdir):
            raise SetupError(f"workdir {options.workdir} is not a directory")
        command = plan(options.kind, argv, workdir, options.bind, limits, userns=options.userns)
        new_session()
        if options.pidfile:
            # The caller kills this process group on cancellation without waiting for MCP's shutdown grace.
            with open(options.pidfile, "w", encoding="ascii") as handle:
                handle.write(f"{os.getpid()}\n")
        env = sandbox_env(SANDBOX_DIR if options.kind == "bwrap" else workdir)
        if options.kind != "bwrap":
            os.chdir(workdir)
        apply_rlimits(limits)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execvpe(command[0], command, env)
    except (SetupError, OSError, ValueError, KeyError) as error:
        print(f"{SETUP_PREFIX} {error}", file=sys.stderr)
        return SETUP_FAILED
    return SETUP_FAILED  # not reached: execvpe does not return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
