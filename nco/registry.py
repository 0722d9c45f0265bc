"""The allowlist of classes that a file's config may name: policies, envs and instance batches.

Checkpoints, Lightning checkpoints and other files carry Hydra-style configs (`_target_` plus
keyword arguments). nco never hands those to `hydra.utils.instantiate`: `build` accepts only a
class registered here, imports nothing outside the plugin packages to find it, and calls it
with plain keyword arguments (no nested `_target_`, no `_partial_`, `_args_` or other Hydra
keys), so a crafted file cannot make nco call `builtins.open`, `os.system` or anything else.

Problems and models register their own classes (`nco/problems/<p>/__init__.py`,
`nco/models/__init__.py`), so adding one needs no edit here; a package outside this tree calls
`add_plugin_package` once and registers its classes the same way. A problem registers one
descriptor (`nco.problem.Problem`, `register_problem`), which also allowlists its env and
instance classes; the commands find problems only through `get_problem` / `problem_of_env`.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nco.problem import Problem

KINDS = ("policy", "env", "instances")
_CLASSES: dict[str, set[type]] = {kind: set() for kind in KINDS}
BUILTIN_PACKAGES = ("nco.models", "nco.problems")
LEGACY_PREFIXES = {"models.": "nco.models.", "problems.": "nco.problems."}
_PLUGINS: set[str] = set()  # top-level packages added by `add_plugin_package`
_READS: dict[type, frozenset[str]] = {}  # policy class -> the env names whose states it reads
_PROBLEMS: dict[str, Problem] = {}


def register_problem(problem: Problem) -> None:
    """Register a problem descriptor by name; its env and instance classes become buildable."""
    from nco.problem import Problem

    if not isinstance(problem, Problem):
        raise ValueError(f"registry: expected an nco.problem.Problem, got {problem!r}.")
    known = _PROBLEMS.get(problem.name)
    if known is not None and known.env is not problem.env:
        raise ValueError(
            f"registry: problem {problem.name!r} is already registered with env "
            f"{known.env.__qualname__}."
        )
    register("env", problem.env)
    register("instances", problem.instances)
    _PROBLEMS[problem.name] = problem


def load_plugins() -> None:
    """Import every problem package (`nco.problems.<p>` and the plugin packages) so they
    register."""
    module = importlib.import_module("nco.problems")
    for info in pkgutil.iter_modules(module.__path__):
        if info.ispkg:
            importlib.import_module(f"nco.problems.{info.name}")
    for package in plugin_packages():
        importlib.import_module(package)


def get_problem(name: Any) -> Problem:
    """The descriptor registered as `name`; ValueError listing the registered ones."""
    if name not in _PROBLEMS and isinstance(name, str) and name.isidentifier():
        try:
            importlib.import_module(f"nco.problems.{name}")
        except ImportError:
            load_plugins()
    if name not in _PROBLEMS:
        load_plugins()
    if name not in _PROBLEMS:
        raise ValueError(f"Unknown problem {name!r}; expected one of {problem_names()}.")
    return _PROBLEMS[name]


def problem_names() -> list[str]:
    """Names of every registered problem (after importing the problem packages), sorted."""
    load_plugins()
    return sorted(_PROBLEMS)


def problem_name(problem_cfg: Mapping[str, Any]) -> str:
    """A problem config's `name`, else the registered problem whose env its `_target_` (or
    `env._target_`) names; ValueError when it names neither."""
    if problem_cfg.get("name"):
        return str(problem_cfg["name"])
    env_cfg = problem_cfg.get("env") or {}
    target = problem_cfg.get("_target_") or env_cfg.get("_target_")
    if target:
        env_cls = resolve("env", target, "problem.env._target_")
        for problem in _PROBLEMS.values():
            if problem.env is env_cls:
                return problem.name
    raise ValueError("problem config: expected a 'name' or a registered env _target_.")


def problem_of_env(env: Any) -> Problem:
    """The descriptor whose env class `env` is an instance of."""
    for problem in _PROBLEMS.values():
        if isinstance(env, problem.env):
            return problem
    name = getattr(env, "name", None)
    if isinstance(name, str):
        return get_problem(name)
    raise ValueError(f"No problem is registered for env {type(env).__qualname__}.")


def register(kind: str, *classes: type, reads: tuple[str, ...] = ()) -> None:
    """Allow `classes` to be built from files as `kind` ("policy", "env" or "instances").

    For policies, `reads` names the problems (env `name`s) whose states they can read, so a
    mismatched model and problem are refused before any work (`check_pair`).
    """
    if kind not in KINDS:
        raise ValueError(f"registry: unknown kind {kind!r}; expected one of {KINDS}.")
    if reads and kind != "policy":
        raise ValueError("registry: only policies take `reads`.")
    for cls in classes:
        if not isinstance(cls, type):
            raise ValueError(f"registry: expected a class, got {cls!r}.")
        _CLASSES[kind].add(cls)
        if reads:
            _READS[cls] = frozenset(reads)


def check_pair(model: Mapping[str, Any], env: Mapping[str, Any], where: str) -> None:
    """Refuse a model config whose policy cannot read the states of the env config's problem."""
    policy = resolve("policy", model.get("_target_"), f"{where}: field 'model'._target_")
    env_cls = resolve("env", env.get("_target_"), f"{where}: field 'problem.env'._target_")
    problems, name = _READS.get(policy), getattr(env_cls, "name", None)
    if problems and name not in problems:
        raise ValueError(
            f"{where}: model {policy.__qualname__} reads {'/'.join(sorted(problems))} states, "
            f"not {name}; pick a {name} model (e.g. model=default_{name})."
        )


def add_plugin_package(name: str) -> None:
    """Let targets under the top-level package `name` be looked up (its modules register)."""
    if not name.isidentifier():
        raise ValueError(f"registry: expected a package name, got {name!r}.")
    _PLUGINS.add(name)


def plugin_packages() -> tuple[str, ...]:
    """The packages added by `add_plugin_package` (for worker processes)."""
    return tuple(sorted(_PLUGINS))


def canonical_target(target: str) -> str:
    """`target` with the `models.` / `problems.` prefix of files written before nco was one
    package mapped into `nco.`."""
    for old, new in LEGACY_PREFIXES.items():
        if target.startswith(old):
            return new + target[len(old) :]
    return target


def _allowed_module(module_name: str) -> bool:
    """True for modules of nco's model and problem packages and of the plugin packages."""
    roots = (*BUILTIN_PACKAGES, *_PLUGINS)
    return any(module_name == root or module_name.startswith(root + ".") for root in roots)


def registered(kind: str) -> list[str]:
    """Dotted names of the classes registered as `kind`, sorted."""
    return sorted(f"{c.__module__}.{c.__qualname__}" for c in _CLASSES[kind])


def resolve(kind: str, target: Any, field: str) -> type:
    """The registered class named `target`; ValueError naming `field` and the target otherwise.

    Only modules of the plugin packages are imported (they are nco's own code, and importing
    one runs its registrations); any other name is refused before anything is imported.
    """
    if kind not in KINDS:
        raise ValueError(f"registry: unknown kind {kind!r}; expected one of {KINDS}.")
    if not isinstance(target, str) or "." not in target:
        raise ValueError(f"{field}: expected a dotted class name, got {target!r}.")
    module_name, _, attr = canonical_target(target.replace(":", ".")).rpartition(".")
    refused = ValueError(
        f"{field}: {target!r} is not a registered nco {kind} class; "
        f"expected one of {registered(kind) or '(none registered)'}."
    )
    if not _allowed_module(module_name):
        raise refused
    try:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    except ImportError as err:
        raise refused from err
    cls = getattr(module, attr, None)
    if cls not in _CLASSES[kind]:
        raise ValueError(
            f"{field}: {target!r} is not a registered nco {kind} class; "
            f"expected one of {registered(kind)}."
        )
    return cls


def build(kind: str, cfg: Any, field: str, **extra: Any) -> Any:
    """Instantiate `cfg` = {"_target_": registered class, plain keyword arguments}.

    `extra` keyword arguments come from nco itself, not from the file.
    """
    if not isinstance(cfg, Mapping):
        raise ValueError(f"{field}: expected a mapping with '_target_', got {type(cfg).__name__}.")
    cls = resolve(kind, cfg.get("_target_"), f"{field}._target_")
    kwargs = {k: v for k, v in cfg.items() if k != "_target_"}
    for key, value in kwargs.items():
        if not isinstance(key, str) or key.startswith("_"):
            raise ValueError(f"{field}.{key}: only plain keyword arguments are allowed.")
        _check_plain(value, f"{field}.{key}")
    try:
        return cls(**kwargs, **extra)
    except TypeError as err:
        raise ValueError(f"{field}: arguments do not fit {cls.__qualname__}: {err}") from err


def _check_plain(value: Any, field: str) -> None:
    """Numbers, strings, booleans, None, and lists / dicts of them, without `_target_`."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_plain(item, f"{field}[{i}]")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or key.startswith("_"):
                raise ValueError(f"{field}.{key}: nested '_' keys (e.g. _target_) are refused.")
            _check_plain(item, f"{field}.{key}")
        return
    raise ValueError(f"{field}: expected plain data, got {type(value).__name__}.")
