"""Names that moved: they keep working for one release, with a warning saying where they went.

A module lists its moved names and installs :func:`module_getattr` as its ``__getattr__``
(PEP 562): Python calls it only for a name the module does not define, so the current names
cost nothing, and the target module is imported only when an old name is used.
"""

import importlib
import warnings

from .errors import HodDynamicsDeprecationWarning


def module_getattr(module, moved, lazy=None, namespace=None):
    """A module ``__getattr__`` for ``module`` (its ``__name__``).

    ``moved`` maps an old name to its new place ``"package.module:name"`` (``"package.module"``
    for a module): using the old name warns (:class:`HodDynamicsDeprecationWarning`, pointing
    at the caller's line) and returns the object. ``lazy`` maps current names to their place in
    the same form: they are imported on first use, without a warning, and kept in
    ``namespace`` (the module's ``globals()``) so that later uses find them directly. Any other
    name raises AttributeError, as for a module without ``__getattr__``.
    """
    lazy = lazy or {}

    def __getattr__(name):
        if name in lazy:
            value = _resolve(lazy[name])
            if namespace is not None:
                namespace[name] = value
            return value
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        place = moved[name]
        new = place.replace(":", ".")
        warnings.warn(f"{module}.{name} is deprecated and will be removed in the next release; "
                      f"use {new}", HodDynamicsDeprecationWarning, stacklevel=2)
        return _resolve(place)

    return __getattr__


def _resolve(place):
    """The object at ``"package.module:name"``, or the module ``"package.module"``."""
    module, _, name = place.partition(":")
    value = importlib.import_module(module)
    return getattr(value, name) if name else value
