"""BFCL's multi-turn executable backends (from the pinned ``bfcl-eval`` wheel), one set per sample and epoch.

bfcl-eval keeps its backend instances in module globals keyed by model and entry and ``eval``s the model's
call text against them. Here every :class:`BfclBackends` owns its instances, and a call is made from a
parsed name and argument object: a name that is not a public method of an involved class is refused, never
evaluated. Results are turned into text exactly as ``execute_multi_turn_func_call`` does, so BFCL's response
checker sees the same strings.

Only the modules that need no pinned SDK are imported (the backend classes, ``executable_backend_config``
and ``multi_turn_checker``), when first needed.
"""

from __future__ import annotations

import ast
import copy
import importlib
import inspect
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

from toolgauge.errors import DataError, UsageError

BFCL_EVAL_HINT = (
    "BFCL multi-turn needs bfcl-eval's backends: run `make setup` (or "
    "`pip install --no-deps bfcl-eval==2026.3.23 mpmath`)"
)

# BFCL's deny-list: these names are refused before evaluation (multi_turn_utils.execute_multi_turn_func_call).
_DENIED = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})


def bfcl_module(name: str) -> ModuleType:
    """Import ``bfcl_eval.<name>``, or raise a one-line ``UsageError`` saying how to install bfcl-eval."""
    try:
        return importlib.import_module(f"bfcl_eval.{name}")
    except ImportError as exc:
        raise UsageError(f"{BFCL_EVAL_HINT} ({exc})") from None


def execution_text(result: Any) -> str:
    """A method's return value as BFCL hands it to the model and the response checker."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


class BfclBackends:
    """The involved classes of one entry, loaded with its initial state; calls run on these instances only.

    Methods are bound by name in ``involved_classes`` order, a later class's method of the same name
    winning, as BFCL's name-to-instance mapping does.
    """

    def __init__(self, involved_classes: list[str], initial_config: dict[str, Any], *, long_context: bool):
        config = bfcl_module("constants.executable_backend_config")
        self.instances: dict[str, Any] = {}
        for class_name in involved_classes:
            module_path = config.CLASS_FILE_PATH_MAPPING.get(class_name)
            if module_path is None:
                raise DataError("involved_classes", f"unknown BFCL backend class {class_name!r}")
            try:
                cls = getattr(importlib.import_module(module_path), class_name)
            except ImportError as exc:
                raise UsageError(f"{BFCL_EVAL_HINT} ({exc})") from None
            instance = cls()
            if class_name not in config.STATELESS_CLASSES:
                instance._load_scenario(copy.deepcopy(initial_config.get(class_name, {})), long_context=long_context)
            self.instances[class_name] = instance
        self.methods = self._bind()

    def _bind(self) -> dict[str, Callable[..., Any]]:
        methods: dict[str, Callable[..., Any]] = {}
        for instance in self.instances.values():
            for name in _public_methods(type(instance)):
                methods[name] = getattr(instance, name)
        return methods

    def clone(self) -> BfclBackends:
        """An independent copy of the current state (for judging one turn from a given state)."""
        twin = object.__new__(BfclBackends)
        twin.instances = copy.deepcopy(self.instances)
        twin.methods = twin._bind()
        return twin

    def execute(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one call and return its result text; failures are ``Error during execution: ...`` as in BFCL.

        A name that is no public method of an involved class runs nothing: BFCL's message for a denied name,
        else the ``NameError`` text its ``eval`` would give.
        """
        method = self.methods.get(name)
        if method is None:
            if name in _DENIED:
                return f"Error during execution: Function call {name} is not allowed."
            return f"Error during execution: name {name!r} is not defined"
        try:
            # A copy: backends keep argument objects in their state (a tweet's tags), which must not be shared.
            return execution_text(method(**copy.deepcopy(arguments)))
        except Exception as exc:  # the backend's own failure is the model's result, as in BFCL
            return f"Error during execution: {exc}"

    def bind_arguments(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Positional and keyword arguments of a call to ``name`` as one keyword object (by its signature)."""
        if not args:
            return dict(kwargs)
        method = self.methods.get(name)
        if method is None:
            raise DataError("ground_truth", f"{name!r} is not a method of the involved classes")
        return dict(inspect.signature(method).bind(*args, **kwargs).arguments)

    def state(self) -> dict[str, dict[str, Any]]:
        """Every public attribute of every instance (what BFCL's state checker compares), by class."""
        return {
            class_name: {k: v for k, v in vars(instance).items() if not k.startswith("_")}
            for class_name, instance in self.instances.items()
        }


_METHOD_NAMES: dict[type[Any], tuple[str, ...]] = {}


def _public_methods(cls: type[Any]) -> tuple[str, ...]:
    """The names of ``cls``'s public methods (what ``inspect.getmembers(instance, ismethod)`` finds), once per class.

    Computed from a bare instance's members: the backends' methods are the class's (their instance attributes
    are data), so every instance binds the same names.
    """
    names = _METHOD_NAMES.get(cls)
    if names is None:
        bare: Any = object.__new__(cls)
        found = inspect.getmembers(bare, predicate=inspect.ismethod)
        names = _METHOD_NAMES[cls] = tuple(name for name, _ in found if not name.startswith("_"))
    return names


def parse_call_text(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """A ground-truth call string ``name(arg, key=value)`` as (name, positional, keyword) literal arguments.

    Raises:
        ValueError: not one call of a plain name with literal arguments.
    """
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ValueError(f"not a call of a function name: {text!r}")
    if any(k.arg is None for k in node.keywords):
        raise ValueError(f"** arguments are not supported: {text!r}")
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
    return node.func.id, args, kwargs
