"""The package's layers point down (issue 30): core, then the engine, then the benchmarks, then the
widget helpers, then the simulators, then api. Every import counts, function-local ones too."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "simulators"
# Layer of each module (by its dotted name's first part under simulators); a module may import
# only its own layer or lower ones. results_cache is a leaf utility (a bounded LRU store, no
# imports) that the engine's chain memos use too. The widget helpers sit above the benchmarks: a
# benchmark imports no widget field.
LAYERS = {"core": 0, "results_cache": 0, "engine": 1, "benchmark": 2, "params": 3, "parallel": 3, "plotting": 3}
LAYERS |= {"sims": 4, "api": 5, "__main__": 6}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, str, int]]:
    """(module, name, line) of every `from x import name` and `import x` in the file (resolved)."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found += [(module, a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "", node.lineno) for a in node.names]
    return found


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in files}
    for m, path in files.items():
        for module, name, _ in imports(path):
            target = f"{module}.{name}" if f"{module}.{name}" in files else module
            if target in files and target != m:
                edges[m].add(target)
    return edges


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], -1) if len(parts) > 1 else -1  # the package's own __init__: -1


def test_no_import_cycle_function_local_imports_included():
    edges, state, cycles = graph(), {}, []

    def visit(u: str, stack: list[str]) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(edges[u]):
            if state.get(v) == 1:
                cycles.append(stack[stack.index(v) :] + [v])
            elif not state.get(v):
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for u in sorted(edges):
        if not state.get(u):
            visit(u, [])
    assert not cycles, cycles


def test_layers_point_down_and_no_simulator_imports_another():
    from simulators import api

    simulators = {mod.__name__ for mod in api.SIMULATORS.values()}  # a view module is its simulator's own
    wrong = []
    for m, targets in graph().items():
        for t in targets:
            if layer(t) > layer(m) or (m in simulators and t in simulators):
                wrong.append(f"{m} -> {t}")
    assert not wrong, wrong
    assert all(layer(m) >= 0 for m in graph() if m != "simulators"), [m for m in graph() if layer(m) < 0]


def test_no_private_name_crosses_a_module():
    crossing = [
        f"{module_name(p)}:{line} imports {module}.{name}"
        for p in PACKAGE.rglob("*.py")
        for module, name, line in imports(p)
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not crossing, crossing


def test_the_build_reaches_the_simulators_through_api_only():
    reached = {
        f"{p.relative_to(ROOT)}:{line} {module}.{name}"
        for p in [*(ROOT / "sitebuild").rglob("*.py"), ROOT / "site_build.py"]
        for module, name, line in imports(p)
        if module.startswith("simulators") and (module, name) != ("simulators", "api")
    }
    assert not reached, reached
