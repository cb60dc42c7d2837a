"""The shape of the package, read from its imports (every import, lazy ones included).

- The loop, the runners and the methods know no task and no environment: nothing under
  ``runners/`` or ``methods/`` (every module of it), nor ``loop.py``, imports ``react_bench.envs``
  or ``react_bench.tasks``; a method reaches an environment through ``environment.py``'s seam.
- A method's own types and fields stay in ``methods/``: the record, the events, the console,
  the results and the studies reach them through the generic slots (``record.method``,
  ``RunMetrics.method``, ``events.MethodStage``) and the method's hooks.
- The import graph between the package's modules has no cycle.
- The stand-ins for tests (``react_bench.testing``) are imported by nothing else of the package:
  what a run needs (the project's own WebShop server) lives beside its environment.
- ``scripts/`` holds what a user runs; the project's self-benchmarks live in ``bench/``.
- The run record (``record.py``) is a ground floor: it knows the provider-neutral types only, so
  every reader (results, studies, export, notebooks) can import it without the run path.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "react_bench"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def _imports(path: Path) -> set[str]:
    """The package modules ``path`` imports (``from a import b`` is ``a.b`` where that is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from pkg import sub`` imports the submodule; ``from mod import name`` the module
            subs = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [sub if sub in MODULES else node.module for sub in subs]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found - {_module(path)}


GRAPH = {module: _imports(path) for module, path in MODULES.items()}


def test_the_loop_the_runners_and_the_methods_know_no_task_and_no_environment() -> None:
    core = [
        m
        for m in GRAPH
        if m.startswith(("react_bench.runners", "react_bench.methods"))
        or m in ("react_bench.loop", "react_bench.methods")
    ]
    assert len(core) >= 14 and "react_bench.methods.lats_official_webshop" in core
    for module in core:
        bad = sorted(i for i in GRAPH[module] if i.startswith(("react_bench.envs", "react_bench.tasks")))
        assert not bad, f"{module} imports {bad}"


def test_the_import_graph_has_no_cycle() -> None:
    # parent packages are not edges: importing a.b runs a/__init__, which is a module of its own here
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :] + [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module)


def test_nothing_but_the_tests_stand_ins_imports_them() -> None:
    outside = [m for m in GRAPH if not m.startswith("react_bench.testing")]
    assert len(outside) > 50
    for module in outside:
        bad = sorted(i for i in GRAPH[module] if i.startswith("react_bench.testing"))
        assert not bad, f"{module} imports {bad}"


def test_scripts_hold_no_benchmark() -> None:
    scripts = PACKAGE.parent / "scripts"
    bench = PACKAGE.parent / "bench"
    assert not sorted(p.name for p in scripts.glob("bench*")), "benchmarks belong in bench/"
    assert (bench / "README.md").is_file() and len(list(bench.glob("bench_*.py"))) >= 10


def test_the_run_record_is_a_ground_floor() -> None:
    assert GRAPH["react_bench.record"] <= {"react_bench.types"}, GRAPH["react_bench.record"]
    readers = ("react_bench.results", "react_bench.evaluate", "react_bench.methods.core", "react_bench.console")
    assert all("react_bench.record" in GRAPH[m] for m in readers)


def test_the_console_command_is_the_top_floor_and_names_only_scripts_that_exist() -> None:
    from react_bench.cli import COMMANDS, SCRIPTS

    assert not [m for m, imports in GRAPH.items() if "react_bench.cli" in imports]
    assert GRAPH["react_bench.cli"] == set()  # it runs the scripts; it imports none of the package
    assert all((SCRIPTS / f"{name.replace('-', '_')}.py").is_file() for name in COMMANDS)


def test_the_run_knows_its_executors_by_their_interface_only() -> None:
    """Executors are a floor: the run (``evaluate``) asks ``executors.base.Executor`` and
    ``start_executor``; no module outside ``executors/`` names a kind of executor, and no executor
    imports the run."""
    kinds = {"LocalExecutor", "BatchExecutor", "WorkerPool"}
    for module, path in MODULES.items():
        if module.startswith("react_bench.executors"):
            assert "react_bench.evaluate" not in GRAPH[module], module
            continue
        names = {n.id for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.Name)}
        names |= {
            a.name
            for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.ImportFrom)
            for a in n.names
        }
        assert not names & kinds, f"{module} names {sorted(names & kinds)}"
    assert {"react_bench.executors", "react_bench.executors.base"} <= GRAPH["react_bench.evaluate"]


def _literals(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return set().union(*(_literals(e) for e in node.elts)) if node.elts else set()
    return set()


def _names_a_mode(node: ast.AST) -> bool:
    """Whether an expression reads a mode: a name, an attribute or a key with "mode" in it."""
    for n in ast.walk(node):
        said = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            said = n.value
        if said is not None and "mode" in said.lower():
            return True
    return False


def test_methods_are_asked_not_named_outside_their_floor() -> None:
    """A method is a registry entry (``methods/registry.py``): outside ``methods/`` no module
    imports a method's own module, and none compares a mode with a method's name (the experiments'
    lists of runs in ``paper.py`` aside). Parts and prompt styles (``spec.first == "react"``, a
    runner's ``style``) are the spec's vocabulary, not a method's name."""
    from react_bench.methods.registry import methods

    names = set(methods())
    assert {"react", "reflexion", "lats", "best_of_k"} <= names
    own = {m for m in MODULES if m.startswith("react_bench.methods.")} - {
        "react_bench.methods.core",
        "react_bench.methods.registry",
        "react_bench.methods.pricing",
    }
    branches = []
    for module, path in MODULES.items():
        if module.startswith("react_bench.methods") or module == "react_bench.paper":
            continue
        assert not GRAPH[module] & own, f"{module} imports {sorted(GRAPH[module] & own)}"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                named = set().union(*(_literals(s) for s in sides)) & names
                if named and any(_names_a_mode(s) for s in sides):
                    branches.append(f"{module}:{node.lineno} compares a mode with {sorted(named)}")
            if isinstance(node, ast.Match) and _names_a_mode(node.subject):
                cases = {
                    v for c in node.cases if isinstance(c.pattern, ast.MatchValue) for v in _literals(c.pattern.value)
                }
                if cases & names:
                    branches.append(f"{module}:{node.lineno} matches a mode against {sorted(cases & names)}")
    assert not branches, branches


# A method's own types and fields (Reflexion's trials, LATS's tree and search): the names no module
# outside ``methods/`` (and the tests' stand-ins) may use, as an attribute, a name or an import.
METHOD_OWN = {
    "attributes": {"reflexion", "lats", "tree", "trials"},
    "names": {"TrialStarted", "SearchIteration", "TrialCurve", "SearchSummary", "METHOD_FIELDS", "Trial"},
}


def _outside_methods() -> dict[str, Path]:
    return {m: p for m, p in MODULES.items() if not m.startswith(("react_bench.methods", "react_bench.testing"))}


def test_no_module_outside_methods_names_a_methods_own_types_or_fields() -> None:
    found = []
    for module, path in _outside_methods().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in METHOD_OWN["attributes"]:
                found.append(f"{module}:{node.lineno} .{node.attr}")
            elif isinstance(node, ast.Name) and node.id in METHOD_OWN["names"]:
                found.append(f"{module}:{node.lineno} {node.id}")
            elif isinstance(node, ast.ImportFrom):
                found += [
                    f"{module}:{node.lineno} imports {a.name}" for a in node.names if a.name in METHOD_OWN["names"]
                ]
    assert not found, found


def _constants(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of a module, those of type annotations (``Literal[...]``) left out."""
    typed: set[int] = set()
    for node in ast.walk(tree):
        for hint in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            typed |= {id(n) for n in ast.walk(hint)} if hint is not None else set()
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
            typed |= {id(n) for n in ast.walk(node)}
    return [
        n for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in typed
    ]


def test_at_most_two_modules_outside_methods_hold_a_methods_name() -> None:
    """A method's name as a string constant outside ``methods/`` (``paper.py``'s experiment lists
    aside): at most two modules. The names counted are the registry's, less the parts and prompt
    styles every layer speaks (``standard``, ``cot``, ``cot_sc``, ``act``, ``react``, and
    ``react_im``, ALFWorld's prompt style): those are the spec's vocabulary, not a method's."""
    from typing import get_args

    from react_bench.methods.core import Part
    from react_bench.methods.registry import methods

    styles = set(get_args(Part)) | {"react_im"}
    names = set(methods()) - styles
    assert {"reflexion", "lats", "best_of_k", "react_cot_sc"} <= names
    holders: dict[str, list[str]] = {}
    for module, path in _outside_methods().items():
        if module == "react_bench.paper":
            continue
        held = sorted({n.value for n in _constants(ast.parse(path.read_text(encoding="utf-8"))) if n.value in names})
        if held:
            holders[module] = held
    assert len(holders) <= 2, holders
