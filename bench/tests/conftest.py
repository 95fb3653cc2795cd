"""Test set-up: the repository root on sys.path (so `import bench` works from any directory) and
Triton's interpreter on, so the Triton kernels run on the CPU (set before triton is imported)."""

import os
import sys
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def interpreter_works() -> bool:
    """Triton 3.6's interpreter turns 1-element arrays into ints, which numpy >= 2.4 refuses
    (numpy 2.4.6 fails its tests, 2.3.5 passes them)."""
    import numpy

    major, minor = (int(part) for part in numpy.__version__.split(".")[:2])
    return (major, minor) < (2, 4)


INTERPRETER_SKIP = "Triton 3.6's CPU interpreter needs numpy < 2.4 (pip install 'numpy<2.4')"
