"""The build's checks on what a learner reads: prose where it belongs.

Two slips that a build can see and a reader trips over:

- prose in a code cell: a heading or an exercise's steps written as `#`
  comments because a `# %% [markdown]` line went missing (the exercise then
  hides inside the cell above it);
- prose that speaks of a panel the figure does not have ("the middle
  panel" of a two-panel figure). The figures say which panels they draw:
  `kit.live.panels` for `LivePlotCallback`, `kit.explore.PANELS` for the
  explorers.

`problems(cells)` returns one line per slip; `python -m kit build` prints
them and fails.
"""

import ast
import re

HEADING = re.compile(r"#\s+#{1,6}\s")  # '# ## Exercise 4' inside code
PANEL = re.compile(r"(?:`([^`]+)`|([\w/-]+))\s+panels?\b", re.IGNORECASE)
# words before "panel" that name no panel: "a panel", "each panel"
NOT_A_NAME = {"a", "an", "the", "each", "every", "one", "this", "that",
              "its", "same", "other", "which", "new", "own", "whole", "two",
              "three", "both", "their", "your"}
# position -> whether a figure with n panels (in one row) has it
POSITIONS = {
    "left": lambda n: n >= 2, "left-hand": lambda n: n >= 2,
    "right": lambda n: n >= 2, "right-hand": lambda n: n >= 2,
    "middle": lambda n: n >= 3 and n % 2, "centre": lambda n: n >= 3 and n % 2,
    "center": lambda n: n >= 3 and n % 2, "first": lambda n: n >= 1,
    "second": lambda n: n >= 2, "third": lambda n: n >= 3,
    "top": lambda n: False, "bottom": lambda n: False,
    "upper": lambda n: False, "lower": lambda n: False,
}
# trailing comment lines a code cell may end with (a note, not prose)
TRAILING_COMMENTS = 2


def prose_in_code(source):
    """What in a code cell reads as markdown: headings, ★, a comment tail."""
    found = []
    lines = source.splitlines()
    for line in lines:
        text = line.strip()
        if HEADING.match(text) or (text.startswith("#") and "★" in text):
            found.append(f"a heading or exercise text as a comment: "
                         f"{text!r}")
    tail = 0
    for line in reversed(lines):  # '### END SOLUTION' is a marker, not prose
        text = line.strip()
        if text and (not text.startswith("#") or text.startswith("###")):
            break
        tail += bool(text.strip("#").strip())
    if tail > TRAILING_COMMENTS and tail < len(
            [line for line in lines if line.strip()]):
        found.append(f"the cell ends in {tail} lines of comments after its "
                     "code: prose belongs in a markdown cell")
    return found


def figure_panels(code):
    """The panel names of the figure a code cell draws, or None."""
    from kit import explore, live
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    # the live plot grows a generation panel once a run generates: GRPO
    generates = "grpo" in code.lower()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr",
                                                         None)
        if name == "LivePlotCallback":
            given = node.args[:1] + [k.value for k in node.keywords
                                     if k.arg == "metrics"]
            try:
                metrics = ast.literal_eval(given[0]) if given else ()
            except ValueError:
                return None  # metrics from a variable: cannot tell
            return live.panels(metrics, generates)
        if name in explore.PANELS:
            return explore.PANELS[name]
    return None


def _figure_near(cells, i):
    """The panels of the figure cell i's prose describes: below, or above."""
    for step in (1, -1):
        j = i + step
        while 0 <= j < len(cells) and cells[j].cell_type == "code":
            panels = figure_panels(cells[j].source)
            if panels is not None:
                return panels
            j += step
    return None


def wrong_panels(prose, panels):
    """Each panel `prose` speaks of that a figure of `panels` lacks."""
    found = []
    for match in PANEL.finditer(prose):
        word = (match.group(1) or match.group(2)).lower()
        if word in NOT_A_NAME:
            continue
        if panels is None:
            found.append(f"speaks of the {word!r} panel, and no figure is "
                         "drawn next to it")
        elif word in POSITIONS:
            if not POSITIONS[word](len(panels)):
                found.append(f"speaks of the {word} panel, but the figure "
                             f"has {len(panels)} panel(s) in a row: "
                             f"{'; '.join(panels)}")
        elif not any(word in name.lower() for name in panels):
            found.append(f"speaks of the {word!r} panel, but the figure's "
                         f"panels are: {'; '.join(panels)}")
    return found


def _heading(cells, i):
    for cell in reversed(cells[:i + 1]):
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("# ").strip()
    return "the top"


def problems(cells):
    """One line per slip in a notebook's source cells."""
    found = []
    for i, cell in enumerate(cells):
        if cell.cell_type == "code":
            slips = prose_in_code(cell.source)
        elif cell.cell_type == "markdown":
            slips = wrong_panels(cell.source, _figure_near(cells, i))
        else:
            slips = []
        where = f"cell {i} ({cell.cell_type}, under {_heading(cells, i)!r})"
        found += [f"{where}: {slip}" for slip in slips]
    return found
