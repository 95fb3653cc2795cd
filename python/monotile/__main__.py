"""``python -m monotile ...``: the ``monotile`` command line, the same binary with the same
arguments (``python -m monotile warmup --target sm_90a,gfx942 ...`` fills the kernel cache as the
tool does). The installed package ships the tool beside its extension; a build tree's module runs
the tree's tool. ``MONOTILE_TOOL`` names another."""

import os
import sys
from pathlib import Path


def tool_path() -> Path:
    """The tool this package runs, or SystemExit naming where it looked."""
    if os.environ.get("MONOTILE_TOOL"):
        return Path(os.environ["MONOTILE_TOOL"])
    here = Path(__file__).resolve().parent
    looked = [here / "monotile"]
    # A build tree: the package sits in <build>/python/monotile, the tool in <build>/tools.
    for folder in here.parents:
        if (folder / "CMakeCache.txt").exists():
            looked.append(folder / "tools" / "monotile")
            break
    for candidate in looked:
        if os.access(candidate, os.X_OK):
            return candidate
    raise SystemExit(
        "python -m monotile: the monotile tool was not found (looked at: "
        + ", ".join(str(p) for p in looked)
        + "); hint: build the monotile target, or set MONOTILE_TOOL to its path"
    )


def main() -> None:
    tool = tool_path()
    sys.stdout.flush()
    sys.stderr.flush()
    # argv[0] is the tool's full path: the tool finds its compile worker relative to it.
    os.execv(tool, [str(tool), *sys.argv[1:]])


if __name__ == "__main__":
    main()
