"""The fem domain's semantic check: run solution.py with every scikit-fem mesh it builds refined once.

ToolGate runs this file in the sandbox, in the candidate's workdir next to ``solution.py`` (after gate 1 passed).
Every ``init_*`` constructor of scikit-fem's mesh classes returns its mesh refined once (``Mesh.refined(1)``), so
the solution computes its quantity on the refined mesh and prints its ``ANSWER:`` as usual. A solution that builds
no scikit-fem mesh (a Basix-only item) cannot be checked this way: the script flags it ``no_mesh_refined``. The
harness compares the answer with the verified one (toolgate.semantic; docs/toolgate.md, "Domain checks").
"""

import functools
import inspect
import runpy
import sys
from typing import Any

import skfem  # type: ignore[import-untyped]
from skfem.mesh import Mesh  # type: ignore[import-untyped]

made = 0


def refining(original: Any) -> Any:
    """Wrap a mesh constructor so that the mesh it returns is refined once (and counted)."""

    @functools.wraps(original)
    def build(*args: Any, **kwargs: Any) -> Any:
        global made
        mesh = original(*args, **kwargs)
        if isinstance(mesh, Mesh):
            made += 1
            return mesh.refined(1)
        return mesh

    return build


for _, cls in inspect.getmembers(skfem, inspect.isclass):
    if issubclass(cls, Mesh):
        for name, member in list(vars(cls).items()):
            if name.startswith("init_") and isinstance(member, classmethod):
                setattr(cls, name, classmethod(refining(member.__func__)))
try:
    runpy.run_path("solution.py", run_name="__main__")
finally:
    if not made:
        print("TOOLGATE_FLAG no_mesh_refined", file=sys.stderr)
