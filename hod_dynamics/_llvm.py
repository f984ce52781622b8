"""Machine code from LLVM IR through llvmlite, cached on disk by its content.

The kernels of :mod:`hod_dynamics._rnea_ir` are generated as LLVM IR text and compiled here by
LLVM itself (llvmlite, which numba depends on): no C compiler at run time, and none of numba's
type inference, which takes most of numba's compile time. The machine code is for the CPU this
process runs on (its name and features, as numba does) and is stored in a cache directory
under a name derived from the hash of the IR, the CPU and the llvmlite version, so that a
later process loads it in milliseconds, and a changed kernel, CPU or LLVM never loads stale
code (no timestamps involved).

Cache directory: ``$NUMBA_CACHE_DIR/hod_dynamics`` when that variable is set (the compiled code
of this package lives with numba's), else ``__pycache__`` beside this module when writable,
else ``$XDG_CACHE_HOME/hod_dynamics`` (``~/.cache/hod_dynamics``); without any writable
location the code is compiled in memory for this process only.

Compiled functions are called from numba (:func:`call_address`): a numba function passes the
data pointers of its arrays and its integers to a function at an address, which costs no more
than a call between two compiled functions (ctypes would cost microseconds per call).
"""

import hashlib
import os
import tempfile
import threading
from functools import lru_cache

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

OPT_LEVEL = 2  # measured: O3 gives the same machine code for the straight-line kernels

_lock = threading.Lock()
_engines = []  # execution engines holding loaded code: kept alive as long as the process


@lru_cache(maxsize=1)
def _target():
    """(target machine, its identification for cache keys) for the host CPU."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    machine = llvm.Target.from_default_triple().create_target_machine(
        cpu=cpu, features=features, opt=OPT_LEVEL, reloc="pic", codemodel="default")
    ident = f"{llvm.get_process_triple()} {cpu} {features} llvmlite {llvmlite.__version__}"
    return machine, ident


def cache_dir():
    """The directory of the compiled objects (see the module docstring), or None when no
    location is writable."""
    env = os.environ.get("NUMBA_CACHE_DIR")
    candidates = ([os.path.join(env, "hod_dynamics")] if env else
                  [os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__"),
                   os.path.join(os.environ.get("XDG_CACHE_HOME")
                                or os.path.join(os.path.expanduser("~"), ".cache"), "hod_dynamics")])
    for path in candidates:
        try:
            os.makedirs(path, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK):
            return path
    return None


def object_path(ir_text, name):
    """Where the compiled object of ``ir_text`` is (or would be) cached, or None."""
    directory = cache_dir()
    if directory is None:
        return None
    key = hashlib.sha256((_target()[1] + "\n" + ir_text).encode()).hexdigest()[:24]
    return os.path.join(directory, f"{name}-{key}.o")


def is_cached(ir_text, name):
    """True when the machine code of ``ir_text`` is in the disk cache."""
    path = object_path(ir_text, name)
    return path is not None and os.path.exists(path)


def compile_ir(ir_text, name):
    """The address of function ``name`` defined in ``ir_text``, compiled for this CPU or loaded
    from the disk cache (one compile per IR text across processes, once per process in memory).
    """
    with _lock:
        return _compile_locked(ir_text, name)


@lru_cache(maxsize=None)
def _compile_locked(ir_text, name):
    machine, _ = _target()
    path = object_path(ir_text, name)
    obj = None
    if path is not None and os.path.exists(path):
        try:
            with open(path, "rb") as f:
                obj = f.read()
        except OSError:
            obj = None
    if not obj:
        module = llvm.parse_assembly(ir_text)
        module.verify()
        builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(OPT_LEVEL))
        builder.getModulePassManager().run(module, builder)
        obj = machine.emit_object(module)
        if path is not None:
            _write_atomically(path, obj)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    _engines.append(engine)
    return engine.get_function_address(name)


def _write_atomically(path, data):
    """Write through a temporary file renamed into place: a process reading the cache never
    sees half a file; a failed write leaves no file."""
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass


@intrinsic
def call_address(typingctx, address, args):
    """``f(*args)`` for the compiled function at ``address`` (int64) returning a 32-bit int:
    arrays are passed as their data pointers, integers as 64-bit integers (numba intrinsic:
    the call is compiled into the calling numba function)."""
    if not isinstance(args, types.BaseTuple):
        return None
    if not all(isinstance(t, (types.Array, types.Integer)) for t in args):
        return None
    sig = types.int32(address, args)

    def codegen(context, builder, signature, values):
        addr, packed = values
        params = []
        for ty, value in zip(signature.args[1], cgutils.unpack_tuple(builder, packed, len(args))):
            if isinstance(ty, types.Array):
                params.append(context.make_array(ty)(context, builder, value).data)
            else:
                params.append(context.cast(builder, value, ty, types.int64))
        fnty = ir.FunctionType(ir.IntType(32), [p.type for p in params])
        function = builder.inttoptr(addr, fnty.as_pointer())
        return builder.call(function, params)

    return sig, codegen
