"""The core's boundaries, read from the source (every import, a function's lazy ones too).

- Only the faces (tutor/app, tutor/cli.py, tutor/cli_views.py) import textual or a face: the core serves both.
- The harness, which runs learner code in a subprocess, imports only itself and the protocol.
- No module imports another's private names (`from tutor.x import _y`): what is shared is public.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TUTOR = Path(__file__).resolve().parent.parent / "tutor"
FACES = ("app/", "cli.py", "cli_views.py")


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names imported from it) for every import statement in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names]))
    return found


def modules(*, under: str = "") -> list[Path]:
    return sorted((TUTOR / under).rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(TUTOR).as_posix()


@pytest.mark.parametrize("path", [p for p in modules() if not rel(p).startswith(FACES)], ids=rel)
def test_the_core_never_imports_a_face(path):
    faces = [m for m, _ in imports(path) if m.split(".")[0] == "textual" or m.startswith(("tutor.app", "tutor.cli"))]
    assert faces == [], f"{rel(path)} imports {faces}: move what both faces need into the core"


@pytest.mark.parametrize("path", modules(under="harness"), ids=rel)
def test_the_harness_imports_only_itself_and_the_protocol(path):
    tutor = [m for m, _ in imports(path) if m.split(".")[0] == "tutor"]
    outside = [m for m in tutor if not (m.startswith("tutor.harness") or m == "tutor.protocol")]
    assert outside == [], f"{rel(path)} imports {outside}"


@pytest.mark.parametrize("path", modules(), ids=rel)
def test_no_module_imports_anothers_private_names(path):
    private = [f"{m}.{n}" for m, names in imports(path) if m.startswith(("tutor", "graders"))
               for n in names if n.startswith("_") and not n.startswith("__")]
    assert private == [], f"{rel(path)} imports {private}: make them public in a module both use"
