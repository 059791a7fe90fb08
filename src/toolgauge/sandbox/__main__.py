"""``python -m toolgauge.sandbox``: print which sandbox is active on this machine and why."""

from toolgauge.sandbox.policy import describe_sandbox

print(describe_sandbox())
