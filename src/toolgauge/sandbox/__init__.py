"""Run untrusted code (generated MCP servers and scripts) in a sandbox.

bubblewrap with every namespace unshared (no network), a read-only root and a private tmpfs workdir,
plus rlimits, an unprivileged uid, a new session and a wall clock; falls back to ``unshare`` namespaces +
rlimits, then to rlimits alone, saying so once. See docs/sandbox.md.
"""

from toolgauge.sandbox.policy import (
    SandboxKind,
    SandboxLimits,
    SandboxStatus,
    describe_sandbox,
    detect_sandbox,
    probe_sandbox,
    sandbox_python,
    sandbox_status,
    sandboxed_command,
)
from toolgauge.sandbox.run import SandboxResult, explain_failure, run_sandboxed

__all__ = [
    "SandboxKind",
    "SandboxLimits",
    "SandboxResult",
    "SandboxStatus",
    "describe_sandbox",
    "detect_sandbox",
    "explain_failure",
    "probe_sandbox",
    "run_sandboxed",
    "sandbox_python",
    "sandbox_status",
    "sandboxed_command",
]
