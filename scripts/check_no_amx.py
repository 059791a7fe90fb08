#!/usr/bin/env python3
"""Fails when llama.cpp's CPU library contains AMX (or AVX-512) instructions.

A native build on an AMX machine crashed with a general protection fault on another machine (issue 8). This is
the machine-independent check: it disassembles the shared libraries and looks for the instructions themselves,
so it holds whatever CPU runs it. Stdlib only: it runs before toolgauge is installed.

Usage:
    check_no_amx.py --installed            # the llama_cpp package importable by this interpreter
    check_no_amx.py --wheel PATH.whl       # a built wheel, before it is installed
    check_no_amx.py --lib PATH.so [...]    # given libraries
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

# AMX: tile config, loads/stores, zeroing and the dot-product families (tdpbssd, tdpbf16ps, tdpfp16ps, ...).
AMX = re.compile(r"\b(ldtilecfg|sttilecfg|tileloadd|tileloaddt1|tilestored|tilezero|tilerelease|tdp[a-z0-9]+)\b")
# AVX-512 code names zmm or mask registers; CPUs without AVX-512 fault on it (SIGILL).
AVX512 = re.compile(r"%zmm\d+|%k[1-7]\b")


def scan(lib: Path) -> dict[str, int]:
    """Counts AMX and AVX-512 instructions in one shared library's code."""
    objdump = shutil.which("objdump")
    if objdump is None:
        raise SystemExit("check_no_amx: objdump not found (apt-get install binutils)")
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(lib)], capture_output=True, text=True, check=True)
    counts = {"amx": 0, "avx512": 0}
    for line in out.stdout.splitlines():
        if AMX.search(line):
            counts["amx"] += 1
        elif AVX512.search(line):
            counts["avx512"] += 1
    return counts


def libraries_in(folder: Path) -> list[Path]:
    """The ggml and llama shared libraries below a folder, each content once (wheels copy version aliases)."""
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob("*.so*")):
        if path.is_file() and ("ggml" in path.name or "llama" in path.name):
            found.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), path)
    return sorted(found.values())


def installed_folder() -> Path:
    """The installed llama_cpp package folder, found without importing it."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("check_no_amx: llama_cpp is not installed for this interpreter")
    return Path(next(iter(spec.submodule_search_locations)))


def check(libs: list[Path]) -> int:
    """Prints one line per library and returns 0 when none has AMX or AVX-512 code."""
    if not any("ggml-cpu" in lib.name for lib in libs):
        print(f"check_no_amx: no libggml-cpu among {[lib.name for lib in libs]}", file=sys.stderr)
        return 1
    bad = 0
    for lib in libs:
        counts = scan(lib)
        status = "ok" if counts["amx"] == 0 and counts["avx512"] == 0 else "NOT PORTABLE"
        print(f"check_no_amx: {lib.name}: {counts['amx']} AMX, {counts['avx512']} AVX-512 instructions: {status}")
        bad += status != "ok"
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--installed", action="store_true")
    group.add_argument("--wheel", type=Path)
    group.add_argument("--lib", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.installed:
        return check(libraries_in(installed_folder()))
    if args.lib:
        return check(list(args.lib))
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(args.wheel) as wheel:
            wheel.extractall(tmp)
        return check(libraries_in(Path(tmp)))


if __name__ == "__main__":
    sys.exit(main())
