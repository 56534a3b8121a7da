"""Workload modules. Every module in this package is imported by the runner,
so a new file here that calls ``register``/``@workload`` is picked up with no
other edit."""

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
