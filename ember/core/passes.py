"""Backend-independent optimization passes on programs (jit runs them before compiling)."""

from __future__ import annotations

from typing import Any

from ember.core.ir import Program

__all__ = ["optimize"]


def optimize(program: Program, consts: list[Any]) -> tuple[Program, list[Any]]:
    """The program after every pass, with the values of its (possibly new) constants (none yet)."""
    return program, consts
