"""What the peers take from vLLM 0.33.0's wheel, and how it is unpacked into the git-ignored `.peers/`.

Nothing of vLLM is in the repository. On the CI-type machine (it has PyPI), once:

    python3 -m pip download --no-deps --only-binary=:all: -d /tmp/vllm-wheel vllm==0.33.0
    python3 -m bench.peers.vllm_wheel /tmp/vllm-wheel/vllm-0.33.0-*.whl .peers

writes `.peers/triton_kernels/` (the MoE table's peer, imported as the top-level package
`triton_kernels`) and `.peers/vllm_stock/vllm/...` (the stock KDA half's kernels, STOCK_FILES, at
their paths in the wheel), and nothing else. The device call carries `.peers`. The stock files keep
their own `from vllm... import` lines; bench/peers/vllm_shims.py serves those modules (the platform
query, the Triton re-export, a few helpers) from small modules written here, so vLLM itself is
never installed or imported. This module needs only the standard library: its tests run anywhere.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import zipfile
from pathlib import Path

WHEEL_VERSION = "0.33.0"
WHEEL_SHA256 = "4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa"

# The stock KDA half on SM90 (vllm/models/kimi_k3/nvidia/kda.py's spec-decode branch and the
# decoder layer's AttnRes): the four kernels' files, then the modules the gated norm's file imports
# at its top (its own package's relative imports; none of their kernels is run).
STOCK_KERNEL_FILES = (
    "vllm/models/kimi_k3/nvidia/ops/attn_res.py",  # _attn_res_kernel (the native op is SM100 only)
    "vllm/model_executor/layers/mamba/ops/causal_conv1d.py",  # causal_conv1d_update
    "vllm/models/kimi_k3/nvidia/ops/third_party/kda/fused_recurrent.py",  # fused_recurrent_kda
    "vllm/third_party/flash_linear_attention/ops/kda.py",  # FusedRMSNormGated
)
_FLA_OPS = "vllm/third_party/flash_linear_attention/ops/"
STOCK_IMPORTED_FILES = tuple(_FLA_OPS + name + ".py" for name in (
    "chunk_delta_h", "cumsum", "fused_recurrent", "index", "l2norm", "op", "solve_tril", "utils"))
STOCK_FILES = STOCK_KERNEL_FILES + STOCK_IMPORTED_FILES
TRITON_KERNELS_PREFIX = "vllm/third_party/triton_kernels/"
STOCK_DIR = "vllm_stock"

# The vLLM modules the stock files import that are not among them: bench/peers/vllm_shims.py
# writes each (tested against the files' import lines).
SHIMMED_MODULES = (
    "vllm._custom_ops",
    "vllm.model_executor.custom_op",
    "vllm.platforms",
    "vllm.triton_utils",
    "vllm.utils.gpu_sync_debug",
    "vllm.utils.math_utils",
    "vllm.utils.torch_utils",
    "vllm.v1.attention.backends.utils",
)
# Imported only on a branch the stock path never takes (causal_conv1d.py's CPU fallback, behind
# current_platform.is_cpu(), which the shim answers False: the Triton kernel runs, also under
# Triton's CPU interpreter).
UNREACHED_MODULES = ("vllm.model_executor.layers.mamba.ops.cpu.causal_conv1d",)


class WheelError(RuntimeError):
    """The wheel is not vLLM 0.33.0's, or lacks a file the peers need."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def unpack(wheel: Path, peers: Path, expected_sha256: str | None = WHEEL_SHA256) -> list[str]:
    """Extracts STOCK_FILES under peers/vllm_stock/ and the triton_kernels package as peers/triton_kernels/
    (both replaced if present); returns the paths written, relative to `peers`."""
    wheel, peers = Path(wheel), Path(peers)
    if expected_sha256 is not None:
        got = sha256_of(wheel)
        if got != expected_sha256:
            raise WheelError(f"{wheel}: sha256 {got}, expected vLLM {WHEEL_VERSION}'s {expected_sha256}; "
                             f"hint: pip download --no-deps vllm=={WHEEL_VERSION}")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        missing = [name for name in STOCK_FILES if name not in names]
        tk = sorted(n for n in names if n.startswith(TRITON_KERNELS_PREFIX) and not n.endswith("/"))
        if missing or not tk:
            what = missing + ([] if tk else [TRITON_KERNELS_PREFIX])
            raise WheelError(f"{wheel}: no {', '.join(what)} in the wheel; expected vLLM {WHEEL_VERSION}'s")
        stock_root, tk_root = peers / STOCK_DIR, peers / "triton_kernels"
        for old in (stock_root, tk_root):
            if old.exists():
                shutil.rmtree(old)
        written = []
        for name in STOCK_FILES:
            _write(z, name, stock_root / name)
            written.append(f"{STOCK_DIR}/{name}")
        for name in tk:
            rel = "triton_kernels/" + name[len(TRITON_KERNELS_PREFIX):]
            _write(z, name, peers / rel)
            written.append(rel)
    return written


def _write(z: zipfile.ZipFile, name: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(z.read(name))


_IMPORT = re.compile(r"^\s*(?:from\s+(vllm(?:\.\w+)*)\s+import\s+(.+)|import\s+(vllm(?:\.\w+)*))", re.M)


def vllm_imports(source: str) -> set[str]:
    """The vLLM modules a file's import lines name (`from vllm import _custom_ops as ops` names
    vllm._custom_ops)."""
    found = set()
    for match in _IMPORT.finditer(source):
        if match.group(3):
            found.add(match.group(3))
            continue
        module, names = match.group(1), match.group(2)
        if module == "vllm":
            found.update("vllm." + part.split(" as ")[0].strip() for part in names.strip("()").split(","))
        else:
            found.add(module)
    return found


def unserved_imports(stock_root: Path) -> dict[str, set[str]]:
    """Per unpacked file, the vLLM modules it imports that are neither unpacked nor shimmed: what the
    stock peer would fail to import. Empty when every import is served."""
    unpacked = {name[:-3].replace("/", ".") for name in STOCK_FILES}
    problems = {}
    for name in STOCK_FILES:
        path = Path(stock_root) / name
        if not path.is_file():
            problems[name] = {"(file not unpacked)"}
            continue
        left = {m for m in vllm_imports(path.read_text()) if m not in unpacked and m not in SHIMMED_MODULES + UNREACHED_MODULES}
        if left:
            problems[name] = left
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -m bench.peers.vllm_wheel VLLM_WHEEL PEERS_DIR (e.g. .peers)", file=sys.stderr)
        return 2
    try:
        written = unpack(Path(argv[0]), Path(argv[1]))
    except (OSError, zipfile.BadZipFile, WheelError) as err:
        print(f"bench.peers.vllm_wheel: {err}", file=sys.stderr)
        return 1
    left = unserved_imports(Path(argv[1]) / STOCK_DIR)
    for name, modules in left.items():
        print(f"bench.peers.vllm_wheel: {name} imports {sorted(modules)}, which no shim serves", file=sys.stderr)
    print(f"{len(written)} files under {argv[1]}: {len(STOCK_FILES)} stock KDA files, "
          f"{len(written) - len(STOCK_FILES)} of triton_kernels")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
