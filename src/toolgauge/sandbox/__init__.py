"""Run untrusted code (generated MCP servers and scripts) in a sandbox.

bubblewrap with every namespace unshared (no network), a read-only root and a private tmpfs workdir,
plus rlimits, an unprivileged uid, a new session and a wall clock. Only bubblewrap counts as isolation:
without it untrusted code is refused unless the loud opt-out (``--unsafe-no-sandbox``) is given, and
then the weaker ``unshare`` namespaces or rlimits fallback is used. See docs/sandbox.md.
"""

from toolgauge.sandbox.policy import (
    SandboxKind,
    SandboxLimits,
    SandboxStatus,
    allow_unisolated,
    describe_sandbox,
    detect_sandbox,
    probe_sandbox,
    require_isolation,
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
    "allow_unisolated",
    "describe_sandbox",
    "detect_sandbox",
    "explain_failure",
    "probe_sandbox",
    "require_isolation",
    "run_sandboxed",
    "sandbox_python",
    "sandbox_status",
    "sandboxed_command",
]
