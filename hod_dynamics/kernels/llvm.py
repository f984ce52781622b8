"""Machine code from LLVM IR through llvmlite, cached on disk by its content.

The kernels of :mod:`hod_dynamics.kernels.rnea_ir` are generated as LLVM IR text and compiled here by
LLVM itself (llvmlite, which numba depends on): no C compiler at run time, and none of numba's
type inference, which takes most of numba's compile time. The machine code is for the CPU this
process runs on (its name and features, as numba does) and is stored in a cache directory
under a name derived from the hash of the IR, the CPU and the llvmlite version, so that a
later process loads it in milliseconds, and a changed kernel, CPU or LLVM never loads stale
code (no timestamps involved).

Longer than the package's other modules (about 550 lines): the writer of the IR (the
:class:`Emitter`, its arithmetic with constants folded, loops, branches, stack slots and a
vectorisable sin/cos), the compile and cache of that IR and the numba intrinsic that calls it
are one concept, the generated code's life from text to call, which both kernel generators
use.

Cache directory: ``$NUMBA_CACHE_DIR/hod_dynamics`` when that variable is set (the compiled code
of this package lives with numba's), else ``__pycache__`` beside this module when writable,
else ``$XDG_CACHE_HOME/hod_dynamics`` (``~/.cache/hod_dynamics``); without any writable
location the code is compiled in memory for this process only.

Compiled functions are called from numba (:func:`call_address`): a numba function passes the
data pointers of its arrays and its integers to a function at an address, which costs no more
than a call between two compiled functions (ctypes would cost microseconds per call). Every
kernel has the signature of :data:`SIGNATURE`, so that one numba function calls them all on
batches (:func:`run`; one compile); the one-sample paths have callers of their own with only
the arguments they use (numba's dispatch costs about 0.1 us per argument).
"""

import hashlib
import os
import struct
import tempfile
import threading
from functools import lru_cache

import llvmlite
import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

OPT_LEVEL = 2  # measured: O3 gives the same machine code for the straight-line kernels
# every kernel: i32 f(ten pointers to doubles (or int64), four int64, the work array or null;
# see Emitter.work)
STACK_WORK = 2**15  # doubles: a work array up to 256 kB goes on the stack of a one-sample call
ARRAYS, INTEGERS = 10, 4


def signature(arrays, integers):
    """The parameters of a kernel in the common signature, named as the kernel uses them
    (unused slots get placeholder names)."""
    arrays = list(arrays) + [f"%unused_a{k}" for k in range(len(arrays), ARRAYS)]
    integers = list(integers) + [f"%unused_i{k}" for k in range(len(integers), INTEGERS)]
    return ", ".join([f"ptr noalias {a}" for a in arrays] + [f"i64 {i}" for i in integers]
                     + ["ptr noalias %work_arg"])

_lock = threading.Lock()
_engines = []  # execution engines holding loaded code: kept alive as long as the process
compiled_here = []  # names of the kernels this process compiled (rather than loaded)
# called as listener(name, cached) just before a kernel is compiled (not when it is loaded):
# hod_dynamics.kernels.backend announces the wait there; an exception it raises stops the compile
compile_listeners = []


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
    A compile is announced first (:data:`compile_listeners`)."""
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
        for listener in compile_listeners:  # the compile notice (hod_dynamics.kernels.backend)
            listener(name, path is not None)
        module = llvm.parse_assembly(ir_text)
        module.verify()
        builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(OPT_LEVEL))
        builder.getModulePassManager().run(module, builder)
        obj = machine.emit_object(module)
        compiled_here.append(name)
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


# sin and cos that vectorise over the lanes (libm's are calls, one sample at a time): Cody-Waite reduction by pi/2 in three parts (the first two of
# 33 bits, so k * part is exact for |k| < 2**20) and the minimax polynomials of fdlibm's
# __kernel_sin and __kernel_cos on [-pi/4, pi/4]. Within 2 ulp of libm (1.1e-16 absolute,
# measured on 10 million angles up to 1e5 rad); beyond SINCOS_LIMIT rad the kernels use libm.
_PIO2_1, _PIO2_2, _PIO2_3 = 1.5707963267341256, 6.077100506303966e-11, 2.0222662487959506e-21
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11
_TWO_OVER_PI = 0.6366197723675814
SINCOS_LIMIT = 1e5



def _hex(c):
    """A double as an exact LLVM IR literal."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", float(c)))[0]


class Emitter:
    """LLVM IR text of one function, written by calls that mirror the arithmetic.

    Values are SSA names (str) or Python floats; arithmetic on floats is folded here, so the
    IR holds no multiplication by 0 or 1 and no addition of 0 (the inputs are checked finite
    before any arithmetic, so 0 x is 0). ``width`` > 1: values are vectors of that many
    doubles (samples in the lanes); scalars read from the model are broadcast.
    """

    def __init__(self, width):
        self.width = width
        self.T = "double" if width == 1 else f"<{width} x double>"
        self.lines = []
        self.count = 0
        self.block = "entry"
        self.intrinsics = {}  # name -> declaration of the LLVM intrinsics called
        self.allocas = []  # stack slots, allocated once in the entry block

    def function(self, name, params):
        """The IR text of the function ``i32 name(params)`` whose body was emitted (the body
        ends with its ``ret``), with the declarations of the intrinsics it calls."""
        head = f"define i32 @{name}({params}) nounwind {{\nentry:"
        return "\n".join([head] + self.allocas + self.lines + ["}"]
                          + sorted(self.intrinsics.values())) + "\n"

    def work(self, size):
        """Define ``%work``, the work array of ``size`` doubles (an i64 value): the caller's
        (the parameter ``%work_arg``), or, when that is null, one on the stack of this call.
        The one-sample callers pass null for small models: a heap allocation per call costs
        more than the arithmetic of a small robot."""
        stack, done = self.new_label("stack"), self.new_label("work")
        before = self.block
        null = self.fresh("c")
        self.emit(f"{null} = icmp eq ptr %work_arg, null")
        self.emit(f"br i1 {null}, label %{stack}, label %{done}")
        self.label(stack)
        slot = self.fresh("p")
        self.emit(f"{slot} = alloca double, i64 {size}, align 16")
        self.emit(f"br label %{done}")
        self.label(done)
        self.emit(f"%work = phi ptr [%work_arg, %{before}], [{slot}, %{stack}]")

    def alloca(self, ty="double"):
        """A stack slot of type ``ty``, allocated once in the entry block (an alloca inside a
        loop would grow the stack at every pass)."""
        r = self.fresh("slot")
        self.allocas.append(f"  {r} = alloca {ty}, align 8")
        return r

    # -- names, blocks, control flow --
    def fresh(self, prefix="t"):
        self.count += 1
        return f"%{prefix}{self.count}"

    def emit(self, text):
        self.lines.append("  " + text)

    def label(self, name):
        self.lines.append(f"{name}:")
        self.block = name

    def new_label(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def loop(self, start, stop, body, step=1):
        """``for i in range(start, stop, step): body(i)`` (i an i64 name; bounds names or
        ints; step > 0)."""
        head, inner, latch, done = (self.new_label(p) for p in ("head", "body", "latch", "done"))
        before = self.block
        i, following = self.fresh("i"), self.fresh("i")
        self.emit(f"br label %{head}")
        self.label(head)
        self.emit(f"{i} = phi i64 [{start}, %{before}], [{following}, %{latch}]")
        more = self.fresh("c")
        self.emit(f"{more} = icmp slt i64 {i}, {stop}")
        self.emit(f"br i1 {more}, label %{inner}, label %{done}")
        self.label(inner)
        body(i)
        self.emit(f"br label %{latch}")
        self.label(latch)
        self.emit(f"{following} = add i64 {i}, {step}")
        self.emit(f"br label %{head}")
        self.label(done)

    def branch(self, condition, then, otherwise=None):
        """``then()`` if the i1 ``condition`` holds, else ``otherwise()`` (if given)."""
        a, b, done = self.new_label("then"), self.new_label("else"), self.new_label("join")
        self.emit(f"br i1 {condition}, label %{a}, label %{b}")
        for label, part in ((a, then), (b, otherwise)):
            self.label(label)
            if part is not None:
                part()
            self.emit(f"br label %{done}")
        self.label(done)

    def icmp(self, predicate, a, b):
        """The i1 of ``a predicate b`` on i64 values (``slt``, ``eq``, ``ne``, ...)."""
        r = self.fresh("c")
        self.emit(f"{r} = icmp {predicate} i64 {a}, {b}")
        return r

    def fcmp(self, predicate, a, b):
        """The i1 (or vector of i1) of ``a predicate b`` on doubles (``olt``, ``oeq``, ...)."""
        r = self.fresh("c")
        self.emit(f"{r} = fcmp {predicate} {self.T} {self.operand(a)}, {self.operand(b)}")
        return r

    def select(self, condition, a, b, kind="i64"):
        """``a if condition else b`` (``kind`` "i64", or "T" for doubles)."""
        ty = self.T if kind == "T" else kind
        ops = (self.operand(a), self.operand(b)) if kind == "T" else (a, b)
        r = self.fresh("n" if kind == "i64" else "t")
        self.emit(f"{r} = select i1 {condition}, {ty} {ops[0]}, {ty} {ops[1]}")
        return r

    def boolean(self, op, a, b):
        """``a op b`` on i1 values (``and``, ``or``)."""
        r = self.fresh("c")
        self.emit(f"{r} = {op} i1 {a}, {b}")
        return r

    # -- integers (i64) --
    def iop(self, op, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return {"add": a + b, "mul": a * b, "sub": a - b}[op]
        if op == "add" and b == 0:
            return a
        if op == "mul" and b == 1:
            return a
        r = self.fresh("n")
        self.emit(f"{r} = {op} i64 {a}, {b}")
        return r

    # -- doubles (vectors of width doubles) --
    def operand(self, x):
        if isinstance(x, float):
            return _hex(x) if self.width == 1 else f"splat (double {_hex(x)})"
        return x

    def _op(self, op, a, b):
        r = self.fresh()
        self.emit(f"{r} = {op} contract {self.T} {self.operand(a)}, {self.operand(b)}")
        return r

    def add(self, a, b):
        if isinstance(a, float):
            if isinstance(b, float):
                return a + b
            if a == 0.0:
                return b
        elif isinstance(b, float) and b == 0.0:
            return a
        return self._op("fadd", a, b)

    def sub(self, a, b):
        if isinstance(b, float):
            if isinstance(a, float):
                return a - b
            if b == 0.0:
                return a
        elif isinstance(a, float) and a == 0.0:
            return self.neg(b)
        return self._op("fsub", a, b)

    def mul(self, a, b):
        if isinstance(a, float) and not isinstance(b, float):
            a, b = b, a
        if isinstance(b, float):
            if isinstance(a, float):
                return a * b
            if b == 0.0:
                return 0.0
            if b == 1.0:
                return a
            if b == -1.0:
                return self.neg(a)
        return self._op("fmul", a, b)

    def div(self, a, b):
        if isinstance(a, float) and isinstance(b, float):
            return a / b
        if isinstance(b, float) and b == 1.0:
            return a
        return self._op("fdiv", a, b)

    def neg(self, a):
        if isinstance(a, float):
            return -a
        r = self.fresh()
        self.emit(f"{r} = fneg {self.T} {a}")
        return r

    def dot(self, pairs):
        """sum of a * b over (a, b) in pairs (a product added to the running sum: an FMA)."""
        total = 0.0
        for a, b in pairs:
            total = self.add(self.mul(a, b), total)
        return total

    def call(self, function, *args, scalar=False):
        """The LLVM intrinsic ``llvm.function`` of doubles (vectors unless ``scalar``)."""
        T = "double" if scalar else self.T
        suffix = "f64" if T == "double" else f"v{self.width}f64"
        name = f"@llvm.{function}.{suffix}"
        self.intrinsics[name] = f"declare {T} {name}({', '.join([T] * len(args))})"
        r = self.fresh()
        joined = ", ".join(f"{T} {_hex(a) if isinstance(a, float) and scalar else self.operand(a)}"
                           for a in args)
        self.emit(f"{r} = call {T} {name}({joined})")
        return r

    def declare(self, name, declaration):
        """Declare an intrinsic that is called by emitted text (``emit``)."""
        self.intrinsics[name] = declaration

    # -- memory --
    def address(self, base, offset):
        if offset == 0:
            return base
        r = self.fresh("p")
        self.emit(f"{r} = getelementptr inbounds double, ptr {base}, i64 {offset}")
        return r

    def load(self, base, offset):
        """The vector at ``base + offset`` doubles (work arrays)."""
        r = self.fresh()
        self.emit(f"{r} = load {self.T}, ptr {self.address(base, offset)}, align 8")
        return r

    def store(self, value, base, offset):
        self.emit(f"store {self.T} {self.operand(value)}, ptr {self.address(base, offset)}, align 8")

    def iload(self, base, offset):
        """The i64 at ``base + offset`` (int64 arrays)."""
        p, r = self.fresh("p"), self.fresh("n")
        self.emit(f"{p} = getelementptr inbounds i64, ptr {base}, i64 {offset}")
        self.emit(f"{r} = load i64, ptr {p}, align 8")
        return r

    def zero(self, base, offset, count):
        """Set ``count`` doubles from ``base + offset`` to zero (i64 values; a memset)."""
        name = "@llvm.memset.p0.i64"
        self.declare(name, f"declare void {name}(ptr, i8, i64, i1)")
        self.emit(f"call void {name}(ptr {self.address(base, offset)}, i8 0, "
                  f"i64 {self.iop('mul', count, 8)}, i1 false)")

    def scalar(self, base, offset):
        """The double at ``base + offset``, broadcast to the lanes (model constants)."""
        r = self.fresh("s")
        self.emit(f"{r} = load double, ptr {self.address(base, offset)}, align 8")
        if self.width == 1:
            return r
        v, b = self.fresh(), self.fresh()
        self.emit(f"{v} = insertelement {self.T} poison, double {r}, i64 0")
        self.emit(f"{b} = shufflevector {self.T} {v}, {self.T} poison, <{self.width} x i32> zeroinitializer")
        return b

    def sincos(self, x):
        """(sin x, cos x) of a vector of angles (see the constants above). The quadrant picks the
        signs and the swap by arithmetic on exact small floats, not by branches or integers, so
        every lane runs the same instructions (floor is one instruction); libm for the lanes beyond
        ``SINCOS_LIMIT`` (a branch taken only when some lane is that far out)."""
        k = self.call("floor", self.add(self.mul(x, _TWO_OVER_PI), 0.5))
        r = self.sub(self.sub(self.sub(x, self.mul(k, _PIO2_1)), self.mul(k, _PIO2_2)),
                     self.mul(k, _PIO2_3))
        z = self.mul(r, r)

        def horner(coefficients):
            acc = coefficients[-1]
            for c in reversed(coefficients[:-1]):
                acc = self.add(c, self.mul(z, acc))
            return acc

        s = self.add(r, self.mul(self.mul(r, z), horner([_S1, _S2, _S3, _S4, _S5, _S6])))
        hz = self.mul(z, 0.5)
        w = self.sub(1.0, hz)
        c = self.add(w, self.add(self.sub(self.sub(1.0, w), hz),
                                 self.mul(self.mul(z, z), horner([_C1, _C2, _C3, _C4, _C5, _C6]))))
        q = self.sub(k, self.mul(self.call("floor", self.mul(k, 0.25)), 4.0))  # quadrant 0..3
        half = self.call("floor", self.mul(q, 0.5))
        odd = self.sub(q, self.mul(half, 2.0))  # 1 in quadrants 1 and 3: sin and cos swap
        ev = self.call("floor", self.mul(self.add(q, 1.0), 0.5))
        parity = self.sub(ev, self.mul(self.call("floor", self.mul(ev, 0.5)), 2.0))
        sign_c = self.sub(1.0, self.mul(parity, 2.0))  # -1 in quadrants 1 and 2
        sign_s = self.sub(1.0, self.mul(half, 2.0))  # -1 in quadrants 2 and 3
        even = self.sub(1.0, odd)
        sn = self.mul(sign_s, self.add(self.mul(odd, c), self.mul(even, s)))
        cs = self.mul(sign_c, self.add(self.mul(odd, s), self.mul(even, c)))
        # lanes beyond the range of the reduction: libm, one lane at a time (rare)
        far = self.fresh("c")
        mask = self.fresh("c")
        self.emit(f"{mask} = fcmp ogt {self.T} {self.call('fabs', x)}, {self.operand(SINCOS_LIMIT)}")
        if self.width == 1:
            self.emit(f"{far} = or i1 {mask}, false")
        else:
            reduce = f"@llvm.vector.reduce.or.v{self.width}i1"
            self.declare(reduce, f"declare i1 {reduce}(<{self.width} x i1>)")
            self.emit(f"{far} = call i1 {reduce}(<{self.width} x i1> {mask})")
        slow, done = self.new_label("libm"), self.new_label("sincos")
        before = self.block
        self.emit(f"br i1 {far}, label %{slow}, label %{done}")
        self.label(slow)
        if self.width == 1:
            sn2, cs2 = self.call("sin", x, scalar=True), self.call("cos", x, scalar=True)
        else:
            sn2, cs2 = sn, cs
            for lane in range(self.width):
                xl = self.fresh()
                self.emit(f"{xl} = extractelement {self.T} {x}, i64 {lane}")
                a, b = self.call("sin", xl, scalar=True), self.call("cos", xl, scalar=True)
                s2, c2 = self.fresh(), self.fresh()
                self.emit(f"{s2} = insertelement {self.T} {sn2}, double {a}, i64 {lane}")
                self.emit(f"{c2} = insertelement {self.T} {cs2}, double {b}, i64 {lane}")
                sn2, cs2 = s2, c2
            s3, c3 = self.fresh(), self.fresh()
            self.emit(f"{s3} = select <{self.width} x i1> {mask}, {self.T} {sn2}, {self.T} {sn}")
            self.emit(f"{c3} = select <{self.width} x i1> {mask}, {self.T} {cs2}, {self.T} {cs}")
            sn2, cs2 = s3, c3
        slow_end = self.block
        self.emit(f"br label %{done}")
        self.label(done)
        s_out, c_out = self.fresh(), self.fresh()
        self.emit(f"{s_out} = phi {self.T} [{self.operand(sn)}, %{before}], [{sn2}, %{slow_end}]")
        self.emit(f"{c_out} = phi {self.T} [{self.operand(cs)}, %{before}], [{cs2}, %{slow_end}]")
        return s_out, c_out

    def strided_copy(self, dst, dst_stride, src, src_stride, count):
        """dst[m * dst_stride] = src[m * src_stride] for m < count (doubles; i64 values)."""
        def body(m):
            s, d = self.iop("mul", m, src_stride), self.iop("mul", m, dst_stride)
            x = self.fresh("x")
            self.emit(f"{x} = load double, ptr {self.address(src, s)}, align 8")
            self.emit(f"store double {x}, ptr {self.address(dst, d)}, align 8")

        self.loop(0, count, body)



@intrinsic
def call_address(typingctx, address, args):
    """``f(*args)`` for the compiled function at ``address`` (int64) returning a 32-bit int:
    arrays are passed as their data pointers, integers as 64-bit integers, None as a null
    pointer (numba intrinsic: the call is compiled into the calling numba function)."""
    if not isinstance(args, types.BaseTuple):
        return None
    if not all(isinstance(t, (types.Array, types.Integer, types.Boolean, types.NoneType))
               for t in args):
        return None
    sig = types.int32(address, args)

    def codegen(context, builder, signature, values):
        addr, packed = values
        params = []
        for ty, value in zip(signature.args[1], cgutils.unpack_tuple(builder, packed, len(args))):
            if isinstance(ty, types.Array):
                params.append(context.make_array(ty)(context, builder, value).data)
            elif isinstance(ty, types.NoneType):  # a null pointer (no work array: the stack)
                params.append(ir.Constant(ir.PointerType(), None))
            else:
                params.append(context.cast(builder, value, ty, types.int64))
        fnty = ir.FunctionType(ir.IntType(32), [p.type for p in params])
        function = builder.inttoptr(addr, fnty.as_pointer())
        return builder.call(function, params)

    return sig, codegen


_CALLERS = {}  # address -> the kernel as a ctypes function


def run_batch(address, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, i0, i1, i2, i3, work_size):
    """:func:`run` through ctypes rather than numba: the same call of the kernel at ``address``
    (ctypes releases the GIL too). A program that only runs batches (a replay) then never
    starts numba's dispatcher, whose first use loads its type registries (0.3 s). The arrays
    must be C-contiguous (their data pointers are passed as they are)."""
    caller = _CALLERS.get(address)
    if caller is None:
        import ctypes

        kind = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_void_p] * ARRAYS), *([ctypes.c_int64] * INTEGERS),
                                ctypes.c_void_p)
        caller = _CALLERS[address] = kind(address)
    work = np.empty(work_size)
    return caller(*(a.ctypes.data for a in (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9)), int(i0), int(i1), int(i2),
                  int(i3), work.ctypes.data)


@numba.njit(cache=True, nogil=True)
def run(address, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, i0, i1, i2, i3, work_size):
    """The kernel at ``address`` on ten flat float64 arrays (int64 arrays viewed as float64)
    and four integers, with a fresh work array of ``work_size`` doubles: the batch paths of
    every kernel (the GIL released, so that threads share large batches)."""
    work = np.empty(work_size)
    return call_address(address, (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, i0, i1, i2, i3, work))
