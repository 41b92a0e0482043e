"""The hub's view of the file system: a mount namespace in which the repository and any folder other accounts may not
enter (`/root`, where pyenv keeps Python on some machines) show only what the class needs: the Python environment,
the proxy and the hub's folder. Every student's server starts inside it, so no student reads `autograder/authoring/reference`
or `source/` in the repository, however its permissions are set; the machine's own view is untouched.

On a machine of its own a deployed hub needs none of this: the course lives in the grader's private home there.
"""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from autograder.paths import ROOT


def unreachable_folder(path: Path) -> Path | None:
    """The outermost folder above `path` that other accounts may not enter; None when every account reaches it."""
    for folder in reversed(path.parents):
        if not folder.stat().st_mode & 0o001:
            return folder
    return None


def hidden_folders(shown: list[Path]) -> dict[Path, list[Path]]:
    """Each folder to hide, with the paths under it to show again: the repository, and the folder other accounts may
    not enter above each shown path."""
    hide = {ROOT.resolve()}
    for path in shown:
        blocked = unreachable_folder(path)
        if blocked is not None:
            hide.add(blocked)
    outermost = {h for h in hide if not any(h != other and other in h.parents for other in hide)}
    return {h: sorted(p for p in shown if h in p.parents) for h in sorted(outermost)}


def private_view(shown: list[Path], argv: list[str]) -> list[str]:
    """`argv` run in a mount namespace of its own in which the hidden folders show only `shown` (needs root)."""
    shown = [Path(p).resolve() for p in shown]
    lines = ["set -e", 'stage=$(mktemp -d)']
    for hidden, reveal in hidden_folders(shown).items():
        for number, path in enumerate(reveal):
            lines.append(f"mkdir -p $stage/{number} && mount --bind {shlex.quote(str(path))} $stage/{number}")
        lines.append(f"mount -t tmpfs -o mode=755 tmpfs {shlex.quote(str(hidden))}")
        for number, path in enumerate(reveal):
            lines.append(f"mkdir -p {shlex.quote(str(path))} && mount --bind $stage/{number} {shlex.quote(str(path))}"
                         f" && umount $stage/{number}")
    lines += ['rm -rf "$stage"', 'exec "$@"']
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines), "sh", *argv]


def shown_paths(hub_folder: Path, python: str, proxy: str) -> list[Path]:
    """What every account must reach: the environment (and the Python it was made from), the proxy's package, the
    hub's folder."""
    package = Path(proxy).parent.parent  # node_modules/.bin/configurable-http-proxy: node_modules
    return [Path(python), Path(sys.base_prefix), package, hub_folder]
