"""What the commands share: the parser that fails in one line, the options that choose a robot's model,
output folders created before any work (and removed when the command fails), memory checks,
progress lines and the types of numeric options."""

import argparse
import math
import os
import sys

from ..arrays import MEMORY_SHARE, available_memory, memory_text
from ..errors import CommandError
from ..model.robots import model_from_description
from ..model.urdf import xacro_args_from_strings


PROG = "hod-dynamics"


class Parser(argparse.ArgumentParser):
    """argparse with the command's one-line errors: no usage block, exit code 2."""

    def error(self, message):
        command = self.prog.split(" ", 1)[1] if " " in self.prog else ""
        hint = f" (see {PROG} {command} --help)" if command else f" (see {PROG} --help)"
        raise CommandError(message + hint)


def version():
    from .. import __version__

    return __version__


def parse_locks(items):
    """``{joint: position}`` of the --lock JOINT=VALUE flags; CommandError for a malformed or
    non-finite value, or a joint given twice (which value was meant?)."""
    locks = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise CommandError(f"--lock expects JOINT=VALUE, got '{item}'")
        try:
            position = float(value)
        except ValueError:
            raise CommandError(f"--lock {item}: '{value}' is not a number") from None
        if not math.isfinite(position):
            raise CommandError(f"--lock {item}: the position must be a finite number (rad or m)")
        if name in locks:
            raise CommandError(f"--lock {name} is given twice ({locks[name]:g} and {position:g}): give each "
                               "joint once")
        locks[name] = position
    return locks


def load_model(args, extensions=False):
    """The model of ``--urdf``/``URDF`` (a file or a shipped robot's name) with the shared model
    options; returns (model, the HodDynamicsWarning messages of the reading: --lenient problems,
    identified inertias, negative <dynamics> values, and with ``extensions`` the extensions read
    past, which ``info`` lists and the other commands leave to it)."""
    return model_from_description(args.urdf, **model_options(args), extensions=extensions)


def model_options(args):
    """The keyword arguments of :meth:`RobotModel.from_urdf` that the shared model options give
    (--root, --tip, --lock, --lenient, --xacro-arg, and --loops, --actuated-joints where a
    command takes them)."""
    options = dict(root_link=args.root, tip_links=args.tip, locked_joints=parse_locks(args.lock),
                   strict=not args.lenient, xacro_args=xacro_args_from_strings(args.xacro_arg, "--xacro-arg"))
    actuated = [name for item in getattr(args, "actuated_joints", None) or [] for name in item.split(",") if name]
    if getattr(args, "loops", None) or actuated:
        options.update(loops=getattr(args, "loops", None), actuated_joints=actuated or None)
    return options

OUTPUTS = []  # (folder, the names it held before, or None; the topmost folder created) of this command


def output_folder(path, flag="--out"):
    """Create the output folder ``path`` (and its parents) before any work, so that a folder
    that cannot be written fails at once, naming the path, and loses nothing. Remembers what
    the command creates there, which :func:`remove_outputs` removes if the command fails."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise CommandError(f"{flag} '{path}' exists and is not a folder")
    top = os.path.abspath(path)
    while not os.path.exists(os.path.dirname(top)) and os.path.dirname(top) != top:
        top = os.path.dirname(top)   # the topmost folder makedirs will create
    before = set(os.listdir(path)) if os.path.isdir(path) else None
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"{flag} '{path}': cannot create the folder ({exc.strerror or exc})") from None
    OUTPUTS.append((path, before, top))
    if not os.access(path, os.W_OK | os.X_OK):
        raise CommandError(f"{flag} '{path}': the folder is not writable")
    return path


def remove_outputs():
    """After a failed command: remove the output folders it created, and the files it wrote
    into folders that existed (files it overwrote stay as they are now)."""
    import shutil

    while OUTPUTS:
        folder, before, top = OUTPUTS.pop()
        if before is None:
            shutil.rmtree(top, ignore_errors=True)
            continue
        for name in set(os.listdir(folder)) - before if os.path.isdir(folder) else ():
            target = os.path.join(folder, name)
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                try:
                    os.remove(target)
                except OSError:
                    pass


def check_memory(estimate, what, advice):
    """Refuse a job whose ``estimate`` (bytes) exceeds MEMORY_SHARE of the available memory."""
    free = available_memory()
    if free is not None and estimate > MEMORY_SHARE * free:
        raise CommandError(f"{what} needs about {memory_text(estimate)} of memory, {memory_text(free)} is "
                           f"available; {advice}")


def plots_possible(no_plot):
    """False with one line on stdout when matplotlib is missing (the plots are skipped)."""
    if no_plot:
        return False
    import importlib.util

    # found, not imported: the commands import it where they draw (analyze-bag: in processes of
    # their own, while this one analyses)
    if importlib.util.find_spec("matplotlib") is None:
        print("plots skipped: matplotlib is not installed (pip install matplotlib); "
              "everything else is written")
        return False
    return True


class Progress:
    """``progress(done, total)`` callback: a one-line bar on stderr (only on a terminal)."""

    def __init__(self, label, enabled):
        self.label, self.enabled, self.last = label, enabled and sys.stderr.isatty(), -1

    def __call__(self, done, total):
        if not self.enabled or total <= 0:
            return
        pct = int(100 * done / total)
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4) + "." * (25 - pct // 4)
            print(f"\r{self.label:<10} [{bar}] {pct:3d}% ({done}/{total})", end="\n" if done >= total else "",
                  file=sys.stderr, flush=True)

    def line(self, message):
        """A status line that replaces the previous one (long jobs with stages)."""
        if self.enabled:
            print(f"\r\033[K{self.label}: {message}", end="", file=sys.stderr, flush=True)
            self.last = -2

    def done(self):
        """End a status line."""
        if self.enabled and self.last == -2:
            print("\r\033[K", end="", file=sys.stderr, flush=True)


def duration_text(seconds):
    if not math.isfinite(seconds):
        return "--"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def order_type(maximum, minimum=0):
    def order(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"{value} is outside {minimum}..{maximum}")
        return value

    return order


def positive(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number > 0")
    return value


def non_negative(text):
    """A finite number >= 0 (seconds of --start/--end, the noise level of --smoothing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number >= 0")
    return value


def probability(text):
    value = positive(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text} must be below 1")
    return value


def add_description_options(sub, lock_help, loops=False):
    """The options that choose the model of a URDF: subtree, locked joints, strictness, xacro;
    with ``loops`` the closures and actuated joints of a mechanism with loops."""
    sub.add_argument("--root", metavar="LINK", help="root link of the model (default: the root of the URDF's one "
                                                    "tree; a description of several trees needs it)")
    sub.add_argument("--tip", action="append", metavar="LINK",
                     help="tip link: keep only the chain root -> LINK (repeat the flag for several tips)")
    sub.add_argument("--lock", action="append", metavar="JOINT=VALUE", help=lock_help)
    sub.add_argument("--lenient", action="store_true",
                     help="read past misspelt URDF names and malformed values the model does not need, with a "
                          "warning (default: an error naming the element, its line and the URDF name meant)")
    sub.add_argument("--xacro-arg", action="append", metavar="NAME:=VALUE",
                     help="argument of a xacro file (repeat the flag for several)")
    if loops:
        sub.add_argument("--loops", metavar="urdf|FILE",
                         help="a mechanism with kinematic loops: urdf closes the loops the URDF declares (Drake's "
                              "<loop_joint>, <drake:ball_constraint>), FILE a closure YAML (see doc/loops.md)")
        sub.add_argument("--actuated-joints", action="append", metavar="JOINT[,JOINT...]",
                         help="the actuated joints of a mechanism with loops, the others passive (default: the "
                              "closure file's, else the URDF's <transmission> joints); the bag's joints are these")
