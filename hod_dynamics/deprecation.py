"""Names and module paths that moved: they keep working for one release, with a warning saying
where they went; and the faces of the wings, whose names are imported on first use.

A module lists its moved names and installs :func:`module_getattr` as its ``__getattr__``
(PEP 562): Python calls it only for a name the module does not define, so the current names
cost nothing, and the target module is imported only when an old name is used. Old module
paths (``hod_dynamics.analysis`` before the package was split into wings) are served by
:class:`MovedModules`, an import finder that answers only for the paths it lists.
"""

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

from .errors import HodDynamicsDeprecationWarning


def module_getattr(module, moved, lazy=None, namespace=None, old_modules=None):
    """A module ``__getattr__`` for ``module`` (its ``__name__``).

    ``moved`` maps an old name to its new place ``"package.module:name"`` (``"package.module"``
    for a module): using the old name warns (:class:`HodDynamicsDeprecationWarning`, pointing
    at the caller's line) and returns the object. ``lazy`` maps current names to their place in
    the same form: they are imported on first use, without a warning, and kept in
    ``namespace`` (the module's ``globals()``) so that later uses find them directly.
    ``old_modules``: the table of a :class:`MovedModules` finder; an old submodule used as an
    attribute (``hd.analysis``) warns naming its new place and is the module of the old path.
    A submodule (``hd.feedforward.actuators``) is imported on first use. Any other name raises
    AttributeError, as for a module without ``__getattr__``.
    """
    lazy = lazy or {}
    old_modules = old_modules or {}

    def __getattr__(name):
        path = f"{module}.{name}"
        if path in old_modules:
            warnings.warn(f"{path} is deprecated and will be removed in the next release; use "
                          f"{old_modules[path][0]}", HodDynamicsDeprecationWarning, stacklevel=2)
            with warnings.catch_warnings():  # the finder's own warning would name this line
                warnings.simplefilter("ignore", HodDynamicsDeprecationWarning)
                return importlib.import_module(path)
        if name in lazy:
            value = _resolve(lazy[name])
            if namespace is not None:
                namespace[name] = value
            return value
        if name not in moved:
            if not name.startswith("__") and importlib.util.find_spec(path) is not None:
                return importlib.import_module(path)
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


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """An import finder (on ``sys.meta_path``) for module paths of an earlier release.

    ``moved`` maps an old dotted path to the modules that now hold its names, first the one
    named in the warning: importing the old path warns once per import statement
    (:class:`HodDynamicsDeprecationWarning`, pointing at the importing line) and gives a
    module whose attributes are looked up in those modules, in order. Every other path is
    left to the other finders.
    """

    def __init__(self, moved):
        self.moved = moved

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.moved:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return _OldPath(spec.name, self.moved[spec.name])

    def exec_module(self, module):
        # stacklevel 2 names the importing line: warnings skips the frames of importlib itself
        warnings.warn(f"{module.__name__} is deprecated and will be removed in the next release; use "
                      f"{module.__places__[0]}", HodDynamicsDeprecationWarning, stacklevel=2)


class _OldPath(types.ModuleType):
    """The module of an old path: every attribute from the first of its new modules that has it."""

    def __init__(self, name, places):
        super().__init__(name, f"Moved to {', '.join(places)}.")
        self.__places__ = tuple(places)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        for place in self.__places__:
            module = importlib.import_module(place)
            if hasattr(module, name):
                return getattr(module, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __dir__(self):
        return sorted({n for p in self.__places__ for n in dir(importlib.import_module(p))})


def install_moved_modules(moved):
    """Put a :class:`MovedModules` finder for ``moved`` on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModules) and f.moved is moved for f in sys.meta_path):
        sys.meta_path.append(MovedModules(moved))


class CallableFace(types.ModuleType):
    """A package face that can still be called as the function of the same name it replaced
    (``hod_dynamics.feedforward(...)`` of an earlier release): the call warns and is passed on
    to the face's function of that name."""

    def __call__(self, *args, **kwargs):
        leaf = self.__name__.rsplit(".", 1)[-1]
        warnings.warn(f"calling {self.__name__}(...) is deprecated and will be removed in the next release; "
                      f"use {self.__name__}.{leaf}(...)", HodDynamicsDeprecationWarning, stacklevel=2)
        return getattr(self, leaf)(*args, **kwargs)
