"""ToolGate (arXiv 2609.02067): build tool-dependent science items through executable acceptance gates.

A generator proposes a candidate (question, four options, proposed answer, solution script); three gates
decide, cheapest first: local verification (:mod:`.verify`), no-tool screens (:mod:`.answers` grades them)
and a tool-enabled solve. This package holds the formats (:mod:`.records`, :mod:`.loader`), the pure answer
rules (:mod:`.answers`), gate 1 (:mod:`.verify`), the audits and funnel (:mod:`.audit`) and the domains
(:mod:`.domains`, one folder each). See docs/toolgate.md.
"""
