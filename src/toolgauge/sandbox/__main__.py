"""``python -m toolgauge.sandbox``: print which sandbox is active on this machine and why."""

from toolgauge.sandbox.policy import REFUSAL, describe_sandbox, sandbox_status

print(describe_sandbox())
if sandbox_status().kind != "bwrap":
    print(f"not isolation: {REFUSAL}")
