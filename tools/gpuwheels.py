"""The wheels the offline GPU box lacks: what they need, and what it has.

A maintainer's tool beside tools/gpucheck.py (which imports it). The box
is a fixed image with its own torch, numpy, pyarrow and pandas; pip there
has no index. So the wheel set is not resolved like a fresh environment:
`tools/gpu-carry.txt` pins only what the box lacks, `make gpu-wheels`
downloads those --no-deps and records their metadata in
`tools/gpu-wheels.lock`, and this module answers two questions about it,
on any machine, with no download:

- `unmet(lock, box)`: is every carried wheel's Requires-Dist (markers
  evaluated for the box's Python) met by the box's recorded packages or
  by another carried wheel?
- `missing_modules(...)`: is every module the solution notebooks import,
  through the kit, available there?

On the box itself `install_plan` reads the versions it really has (the
recorded list names some packages without one: pyarrow, pandas, ...).
"""

import ast
import email.parser
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
BOX = TOOLS / "gpu-box.txt"
CARRY = TOOLS / "gpu-carry.txt"
LOCK = TOOLS / "gpu-wheels.lock"


# ------------------------------------------------------------ reading lists

def read_box(path=BOX):
    """{name: version or None}; the 'python' line gives the Python."""
    box = {}
    for line in _lines(path):
        name, _, version = line.partition("==")
        box[canonicalize_name(name)] = version or None
    return box


def read_not_carried(path=CARRY):
    """{distribution: why}: the '# name: why' lines after 'not carried'."""
    text = Path(path).read_text()
    tail = text.split("# not carried", 1)[1] if "# not carried" in text else ""
    found = re.findall(r"^# ([A-Za-z0-9_.-]+): (.+)$", tail, re.M)
    return {canonicalize_name(name): why for name, why in found}


def _lines(path):
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            yield line


def box_environment(box):
    """The marker environment of the box's Python (Linux, x86_64)."""
    python = box.get("python") or "3.12.3"
    env = default_environment()
    env.update(python_version=".".join(python.split(".")[:2]),
               python_full_version=python, sys_platform="linux",
               platform_system="Linux", os_name="posix",
               platform_machine="x86_64", implementation_name="cpython",
               platform_python_implementation="CPython")
    return env


# ------------------------------------------------------------ wheel metadata

def wheel_facts(path):
    """A wheel's name, version, Requires-Dist, Requires-Python, modules."""
    path = Path(path)
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        meta = next(n for n in names
                    if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
        message = email.parser.Parser().parsestr(wheel.read(meta).decode())
        top = next((n for n in names if n.endswith(".dist-info/top_level.txt")
                    and n.count("/") == 1), None)
        modules = (wheel.read(top).decode().split() if top else
                   _modules_from_paths(names))
    return dict(name=canonicalize_name(message["Name"]),
                version=message["Version"], file=path.name,
                sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                requires=message.get_all("Requires-Dist") or [],
                requires_python=message.get("Requires-Python") or "",
                modules=sorted(set(modules)))


def _modules_from_paths(names):
    modules = set()
    for name in names:
        first = name.split("/", 1)[0]
        if first.endswith((".dist-info", ".data")) or first == "__pycache__":
            continue
        if "/" in name:
            modules.add(first)
        elif first.endswith(".py"):
            modules.add(first[:-3])
        elif ".cpython-" in first or first.endswith((".so", ".pyd")):
            modules.add(first.split(".", 1)[0])
    return modules


def write_lock(folder, into=LOCK):
    """`make gpu-wheels`' record of what it downloaded (sorted, one file)."""
    facts = [wheel_facts(w) for w in sorted(Path(folder).glob("*.whl"))]
    Path(into).write_text(json.dumps(facts, indent=1) + "\n")
    return facts


def read_lock(path=LOCK):
    return json.loads(Path(path).read_text())


# ------------------------------------------------------------ what is unmet

def unmet(lock, box, floors=()):
    """Every carried requirement the box and the other wheels leave unmet.

    `floors` are requirements of our own (the kit's pyproject lines for
    the distributions the notebooks need). One line per problem; a
    requirement on a package the box has with no recorded version is
    left to `install_plan`, which reads the version on the box.
    """
    env = box_environment(box)
    carried = {w["name"]: w for w in lock}
    problems = []
    python = Version(box.get("python") or "3.12.3")
    wanted = [(w["name"] + " " + w["version"], r, ())
              for w in lock for r in w["requires"]]
    wanted += [("the kit", r, ()) for r in floors]
    seen = {}  # extras whose requirements are already queued
    while wanted:
        who, line, extras = wanted.pop(0)
        requirement = Requirement(line)
        if not _applies(requirement, env, extras):
            continue
        name = canonicalize_name(requirement.name)
        if name in carried:
            version = carried[name]["version"]
            for extra in requirement.extras - seen.get(name, set()):
                seen.setdefault(name, set()).add(extra)
                wanted += [(f"{name}[{extra}]", r, (extra,))
                           for r in carried[name]["requires"]]
        elif name in box:
            version = box[name]
            if version is None:
                continue
        else:
            problems.append(f"{who} needs {line}: neither the box nor the "
                            f"wheel set has {name}")
            continue
        if not requirement.specifier.contains(version, prereleases=True):
            where = "the wheel set" if name in carried else "the box"
            problems.append(f"{who} needs {line}: {where} has {name} "
                            f"{version}")
    for wheel in lock:
        spec = wheel["requires_python"]
        if spec and not Requirement(f"python{spec}").specifier.contains(
                python, prereleases=True):
            problems.append(f"{wheel['name']} {wheel['version']} needs "
                            f"Python {spec}: the box has {python}")
    return problems


def _applies(requirement, env, extras):
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate(dict(env, extra=e))
               for e in (extras or ("",)))


def already_on_box(lock, box, floors=()):
    """Carried wheels the box already has at a version nothing refuses."""
    needs = _specifiers(lock, box_environment(box), floors)
    return [w["name"] for w in lock if box.get(w["name"])
            and all(s.contains(box[w["name"]], prereleases=True)
                    for s in needs.get(w["name"], []))]


def _specifiers(lock, env, floors):
    needs = {}
    lines = [r for w in lock for r in w["requires"]] + list(floors)
    for line in lines:
        requirement = Requirement(line)
        if _applies(requirement, env, ()):
            needs.setdefault(canonicalize_name(requirement.name),
                             []).append(requirement.specifier)
    return needs


# ------------------------------------------------------------ on the box

def install_plan(lock, installed, floors=()):
    """On the box: (wheels to install, problems, lines to print).

    `installed` is {name: version} as the box's own Python reports it. A
    carried wheel the box already has at a version every requirement
    accepts is left out (the box's stays); what no wheel can mend (its
    pyarrow, say) is a problem.
    """
    box = dict(installed, python=installed.get("python"))
    keep = set(already_on_box(lock, box, floors))
    chosen = [w for w in lock if w["name"] not in keep]
    # requirements then see the box's version of what stays
    problems = unmet(chosen, box, floors)
    said = [f"kept the box's {name} {installed[name]}" for name in
            sorted(keep)]
    said += [f"{w['name']}: the box's {installed[w['name']]} is refused, "
             f"{w['version']} goes first on the path" for w in chosen
             if installed.get(w["name"])]
    pyarrow = installed.get("pyarrow")
    needing = [(w, r) for w in chosen for r in w["requires"]
               if canonicalize_name(Requirement(r).name) == "pyarrow"]
    if needing:
        wheel, line = needing[0]
        met = pyarrow and Requirement(line).specifier.contains(
            pyarrow, prereleases=True)
        said.append(f"pyarrow: the box has {pyarrow or 'none'}; "
                    f"{wheel['name']} {wheel['version']} needs "
                    f"{Requirement(line).specifier}: "
                    f"{'met' if met else 'NOT met'}")
    return chosen, problems, said


def installed_versions():
    """{name: version} of the running Python's own distributions."""
    from importlib import metadata
    found = {canonicalize_name(d.metadata["Name"]): d.version
             for d in metadata.distributions() if d.metadata["Name"]}
    found["python"] = ".".join(map(str, sys.version_info[:3]))
    return found


# ------------------------------------------------------------ what is imported

def notebook_imports(notebooks):
    """{top-level module: first notebook importing it} of code cells."""
    found = {}
    for path in sorted(notebooks):
        for cell in json.loads(Path(path).read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            source = "\n".join(line for line in source.splitlines()
                               if not line.lstrip().startswith(("%", "!")))
            for name, _ in _imports(ast.parse(source)):
                found.setdefault(name, Path(path).name)
    return found


def _imports(tree, package=""):
    """(module, at module level?) for each import in a syntax tree."""
    for node, top in _walk(tree, True):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) -
                                             node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            yield base, top
            for alias in node.names:  # `from kit import losses`
                yield f"{base}.{alias.name}", top


def _walk(node, top):
    for child in ast.iter_child_nodes(node):
        inner = top and not isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                    ast.Try))
        yield child, top
        yield from _walk(child, inner)


def kit_closure(roots, kit=ROOT / "kit"):
    """External modules the kit modules in `roots` import, transitively.

    Returns {module: "module level" | "inside a function"}: a kit module
    reached only through a function-level import passes that on.
    """
    found, todo, done = {}, [(r, True) for r in roots], set()
    while todo:
        module, top = todo.pop()
        if (module, top) in done:
            continue
        done.add((module, top))
        path = _kit_file(module, kit)
        if path is None:
            continue
        package = module if path.name == "__init__.py" else \
            module.rsplit(".", 1)[0]
        for name, at_top in _imports(ast.parse(path.read_text()), package):
            level = top and at_top
            if name.split(".")[0] == "kit":
                todo.append((name, level))
            elif level or name.split(".")[0] not in found:
                found[name.split(".")[0]] = ("module level" if level
                                             else "inside a function")
    return {m: w for m, w in found.items()
            if m not in sys.stdlib_module_names and m != "__future__"}


def _kit_file(module, kit):
    relative = Path(*module.split(".")[1:])
    for candidate in (kit / relative / "__init__.py",
                      kit / relative.with_suffix(".py") if relative.parts
                      else kit / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def missing_modules(notebooks, lock, box, not_carried, distributions):
    """Modules the notebooks need that neither the box nor the set gives.

    `distributions` maps a top-level module to its distributions, as
    `importlib.metadata.packages_distributions()` gives on a machine with
    the kit's dev extra; a module imported inside a function may instead
    be listed as not carried, with a reason.
    """
    imported = notebook_imports(notebooks)
    kit_roots = [m for m in imported if m.split(".")[0] == "kit"]
    needed = {m.split(".")[0]: "module level" for m in imported
              if m.split(".")[0] not in sys.stdlib_module_names
              and m.split(".")[0] != "kit"}
    for module, where in kit_closure(kit_roots).items():
        if needed.get(module) != "module level":
            needed[module] = where
    carried = {m for w in lock for m in w["modules"]} | {
        w["name"] for w in lock}
    problems = []
    for module, where in sorted(needed.items()):
        names = {canonicalize_name(d) for d in distributions.get(module, [])}
        if module in carried or names & (set(box) | carried):
            continue
        if where == "inside a function" and names & set(not_carried):
            continue
        shown = ", ".join(sorted(names)) or "no installed distribution"
        problems.append(f"{module} ({shown}), imported at {where}, is "
                        f"neither on the box nor in the wheel set")
    return problems


def kit_floors(names, pyproject=ROOT / "pyproject.toml"):
    """The kit's own requirement lines for the distributions in `names`."""
    import tomllib
    lines = tomllib.loads(Path(pyproject).read_text())["project"][
        "dependencies"]
    return [line for line in lines
            if canonicalize_name(Requirement(line).name) in names]
