"""The embedded model's llama.cpp library must run on any x86-64 machine: no AMX, no AVX-512 code in it.

A build with the build machine's native flags used AMX tiles and crashed another machine with a general
protection fault (issue 8). Disassembling the installed library is the check that holds whatever CPU runs it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO

CHECKER = REPO / "scripts" / "check_no_amx.py"
HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None


def run_checker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECKER), *args], capture_output=True, text=True, timeout=300)


def test_installed_llama_library_has_no_amx_or_avx512():
    if not HAVE_LLAMA:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must check the llama.cpp build: llama-cpp-python is not installed")
        pytest.skip("llama-cpp-python not installed (make test installs it)")
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) is not installed")
    result = run_checker("--installed")
    assert result.returncode == 0, result.stdout + result.stderr
    cpu_lines = [line for line in result.stdout.splitlines() if "libggml-cpu" in line]
    assert cpu_lines, result.stdout
    assert all(": 0 AMX, 0 AVX-512 instructions: ok" in line for line in cpu_lines), result.stdout


@pytest.mark.parametrize(
    ("instruction", "kind"),
    [
        ("ldtilecfg (%rdi)", "AMX"),
        ("tileloadd (%rsi,%rdx,1), %tmm0", "AMX"),
        ("tdpbssd %tmm1, %tmm2, %tmm3", "AMX"),
        ("vaddps %zmm1, %zmm2, %zmm3", "AVX-512"),
    ],
)
def test_checker_finds_forbidden_instructions(tmp_path: Path, instruction: str, kind: str):
    if shutil.which("gcc") is None or shutil.which("objdump") is None:
        pytest.skip("gcc and objdump are needed to build a library with the instruction")
    source = tmp_path / "bad.s"
    source.write_text(f".text\n.globl f\nf:\n  {instruction}\n  ret\n")
    lib = tmp_path / "libggml-cpu.so"
    subprocess.run(["gcc", "-shared", "-o", str(lib), str(source)], check=True, capture_output=True)
    result = run_checker("--lib", str(lib))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "NOT PORTABLE" in result.stdout
    assert f"1 {kind}" in result.stdout


def test_checker_passes_plain_code(tmp_path: Path):
    if shutil.which("gcc") is None or shutil.which("objdump") is None:
        pytest.skip("gcc and objdump are needed to build a library")
    source = tmp_path / "ok.c"
    source.write_text("int add(int a, int b) { return a + b; }\n")
    lib = tmp_path / "libggml-cpu.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(source)], check=True, capture_output=True)
    result = run_checker("--lib", str(lib))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 AMX, 0 AVX-512 instructions: ok" in result.stdout
