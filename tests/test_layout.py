"""The shape of kit/: imports that run one way, folders that say who each
file is for, and a docs page (docs/layout.md) that names every file.

The imports are read from the source (every `import`, also those inside
functions), not from a running process, so a circle that only closes when
a function runs is seen too.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT / "kit"
# what only the command line imports: building and grading a class
BENEATH_THE_CLI = ("kit.builder", "kit.grading")


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules():
    """{module name: its path} for every .py file of kit/."""
    return {module_name(path): path for path in sorted(KIT.rglob("*.py"))}


def imports(path, known):
    """The kit modules that `path` imports, wherever the import stands."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:  # `from kit import x`: x may be a module
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
    return {name for name in found if name in known}


def import_map():
    known = modules()
    return {name: imports(path, known) for name, path in known.items()}


def circles(graph):
    """Every module that sits on a loop of imports (Tarjan's components)."""
    index, low, stack, on_stack, looped = {}, {}, [], set(), set()

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                looped.update(component)

    for node in graph:
        if node not in index:
            visit(node)
    return looped


def test_the_circle_finder_sees_a_circle_through_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == {"a", "b", "c"}
    assert circles({"a": {"b"}, "b": set()}) == set()


def test_no_kit_module_imports_one_that_imports_it_back():
    assert circles(import_map()) == set()


def test_only_the_command_line_reaches_building_and_grading():
    """A notebook's kernel imports the top of kit/; building the course and
    grading a class sit beneath `kit.cli`, which alone reaches into them."""
    wrong = {name: sorted(target for target in targets
                          if target.startswith(BENEATH_THE_CLI))
             for name, targets in import_map().items()
             if name != "kit.cli" and not name.startswith(BENEATH_THE_CLI)}
    assert {name: found for name, found in wrong.items() if found} == {}


def test_the_two_packages_import_nothing_on_the_way_in():
    """`python -m kit.grading.kernel_shim` starts once per kernel: its
    package's __init__ must not pull the grader (or anything) in."""
    for package in BENEATH_THE_CLI:
        path = KIT / package.split(".")[1] / "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not [node for node in ast.walk(tree)
                    if isinstance(node, (ast.Import, ast.ImportFrom))], path


def test_the_notebooks_import_neither_building_nor_grading():
    for source in sorted((ROOT / "notebooks" / "src").glob("*.py")):
        text = source.read_text(encoding="utf-8")
        assert not re.search(r"\bkit\.(builder|grading)\b", text), source.name


def where_things_are():
    """The files docs/layout.md ("Where things are") gives a line each."""
    readme = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    section = readme.split("# Where things are", 1)[1]
    listed, folders = [], []
    for line in section.split("```")[1].splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip())) // 2  # two spaces a level
        name = line.split()[0]
        folders = folders[:depth]
        if name.endswith("/"):
            folders.append(name)
        elif name.endswith(".py"):
            listed.append("".join(folders) + name)
    return listed


def test_readme_gives_every_file_of_kit_one_line():
    on_disk = sorted(path.relative_to(ROOT).as_posix()
                     for path in KIT.rglob("*.py"))
    listed = where_things_are()
    assert len(listed) == len(set(listed)), "a file listed twice"
    assert sorted(listed) == on_disk
