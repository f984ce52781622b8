"""The entry point of the command line: the parser of every command, and one line and exit code 2
for every failure a user can cause."""

import os
import sys
import warnings

from ..errors import HodDynamicsError
from ..kernels.backend import compile_notices
from . import analyze_bag, analyze_bags, demo, excite, identify, info
from .common import OUTPUTS, PROG, Parser, remove_outputs, version


def build_parser():
    parser = Parser(prog=PROG, description="Inverse dynamics of URDF robots and its time derivatives of any order.")
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    demo.add_parser(sub)
    info.add_info_parser(sub)
    info.add_robots_parser(sub)
    analyze_bag.add_parser(sub)
    analyze_bags.add_parser(sub)
    identify.add_parser(sub)
    excite.add_parser(sub)
    return parser


def _error(message):
    print(f"{PROG}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def _warning_line(message, category, filename, lineno, file=None, line=None):
    """Warnings as one line ``hod-dynamics: warning: ...`` (no source line)."""
    print(f"{PROG}: warning: {message}", file=sys.stderr if file is None else file)


def _compile_line(text):
    """A compile notice (see backend.compile_notices) as a line on stderr, at once: it comes
    before a wait of seconds, also inside a command that collects library warnings."""
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def _quiet_after_broken_pipe():
    """The reader of stdout went away (``| head``): drop what is left unflushed, exit quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file descriptor (captured in a test)
        pass
    return 141  # 128 + SIGPIPE: what a Unix tool ends with when its reader closes the pipe


def main(argv=None):
    """Run the command line; returns the exit code (0, 2 on a user error, 141 on a closed pipe)."""
    try:
        with warnings.catch_warnings(), compile_notices(_compile_line):
            warnings.showwarning = _warning_line  # restored when the command ends
            try:
                args = build_parser().parse_args(argv)
                args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as given, for the record
                try:
                    return args.func(args)
                except BrokenPipeError:  # the reader went away: what was written is whole
                    raise
                except BaseException:
                    remove_outputs()
                    raise
                finally:
                    OUTPUTS.clear()
            finally:
                sys.stdout.flush()
    except BrokenPipeError:
        return _quiet_after_broken_pipe()
    except HodDynamicsError as exc:
        return _error(exc)
    except OSError as exc:  # a file the command reads or writes (permissions, full disk, ...)
        where = f" '{exc.filename}'" if exc.filename else ""
        return _error(f"{exc.strerror or exc}{where}")
    except MemoryError:
        return _error("out of memory: lower the number of samples (--rate, --duration, --start/--end)")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def run():
    """The ``hod-dynamics`` executable: :func:`main`, then the process ends at once with its exit
    code, its output flushed. Skipping the interpreter's teardown spares a replay about 0.4 s
    (the compiled kernels' engines and numba's registries are freed one object at a time);
    every file the command wrote is closed by then, and a plotting process is reaped."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):   # a closed pipe: what was written is whole
            pass
    os._exit(code if isinstance(code, int) else 1)


if __name__ == "__main__":
    run()
