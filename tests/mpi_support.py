"""What the multi-process tests share: whether MPI is here, and the environment mpirun runs in."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def mpi_missing() -> str | None:
    """Why multi-process runs cannot happen here (mpi4py or mpirun missing), or None when they can."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install -e '.[distributed]')"
    if shutil.which("mpirun") is None:
        return "mpirun is not on PATH (Debian: apt-get install openmpi-bin libopenmpi-dev)"
    return None


needs_mpi = pytest.mark.skipif(mpi_missing() is not None, reason=str(mpi_missing()))


def mpi_env(**extra: str) -> dict[str, str]:
    """This process's environment with the checkout importable and mpirun allowed to run as root (CI does)."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            **extra}  # fmt: skip
