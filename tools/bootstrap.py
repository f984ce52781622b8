#!/usr/bin/env python3
"""Set up the project's .venv and run a job in it: the README's two commands.

    python3 tools/bootstrap.py demo [ARGS...]   # install ".[ros]", run `hod-dynamics demo ARGS`
    python3 tools/bootstrap.py test [ARGS...]   # install ".[all]", run pytest ARGS (the whole suite,
                                                # its 25 slowest tests listed at the end)

Needs only Python 3.10+. When the interpreter's venv module has no ensurepip (Debian/Ubuntu
without python3-venv), the venv is created without pip and pip is bootstrapped from the
system pip or, failing that, from PyPI's pip wheel. The package is installed non-editable so
that share/ (launch, config, URDFs) and the ament index marker exist as on a ROS system.
The install is skipped when the venv already holds this very source (a hash of the files
the install copies, kept in the venv) with the extras the job needs.
"""

import hashlib
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import urllib.request
import venv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv")
PY = os.path.join(VENV, "bin", "python")
EXTRAS = {"demo": "ros", "test": "all"}
ALL = {"ros", "xacro", "identification", "test", "all"}  # what ".[all]" installs
STAMP = os.path.join(VENV, "hod_dynamics.install")
# what `pip install .` reads: a change here needs a reinstall (tests and benchmarks run from
# the source tree and need none)
INSTALLED = ["setup.py", "setup.cfg", "package.xml", "README.md", "hod_dynamics_nodes.py",
             "hod_dynamics", "launch", "config", "resource", "scripts"]


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def has_pip():
    return os.path.exists(PY) and subprocess.run([PY, "-m", "pip", "--version"],
                                                 capture_output=True).returncode == 0


def bootstrap_pip():
    """pip into a venv created without it: system pip first, PyPI's wheel second."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0:
        if subprocess.run([sys.executable, "-m", "pip", "--python", PY, "install", "-q", "pip"]).returncode == 0:
            return
    with urllib.request.urlopen("https://pypi.org/pypi/pip/json", timeout=60) as r:
        urls = [u["url"] for u in json.load(r)["urls"] if u["url"].endswith(".whl")]
    with tempfile.TemporaryDirectory() as tmp:
        wheel = os.path.join(tmp, os.path.basename(urls[0]))
        urllib.request.urlretrieve(urls[0], wheel)
        run([PY, os.path.join(wheel, "pip"), "install", "-q", wheel])


def source_hash():
    """sha256 of the files the install copies (names and contents) and of this Python."""
    digest = hashlib.sha256(sys.version.encode())
    for top in INSTALLED:
        path = os.path.join(ROOT, top)
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(folder, name) for folder, dirs, names in os.walk(path)
            if "__pycache__" not in folder.split(os.sep) for name in names if not name.endswith(".pyc"))
        for name in files:
            digest.update(os.path.relpath(name, ROOT).encode() + b"\0")
            with open(name, "rb") as fh:
                digest.update(fh.read() + b"\0")
    return digest.hexdigest()


def _extras(text):
    extras = set(text.split(","))
    return ALL if "all" in extras else extras


def up_to_date(extras, digest):
    """True when the venv holds this source with (at least) ``extras``, as stamped by the last
    install, and its interpreter still runs."""
    try:
        with open(STAMP, encoding="utf-8") as fh:
            stamped, installed = fh.read().split()
    except (OSError, ValueError):
        return False
    return stamped == digest and _extras(extras) <= _extras(installed) and os.access(PY, os.X_OK)


def ensure_venv(extras):
    digest = source_hash()
    if up_to_date(extras, digest):
        print(f"+ {os.path.relpath(VENV, ROOT)} already holds this source with .[{extras}]: no reinstall",
              flush=True)
        return
    if os.path.exists(STAMP):
        os.remove(STAMP)
    if not has_pip():
        try:
            venv.create(VENV, with_pip=True, clear=os.path.exists(VENV))
        except Exception as exc:  # ensurepip missing (python3-venv not installed)
            print(f"venv with pip failed ({exc}); bootstrapping pip", flush=True)
            venv.create(VENV, with_pip=False, clear=True)
            bootstrap_pip()
    run([PY, "-m", "pip", "install", "-q", "--upgrade", "pip"])
    run([PY, "-m", "pip", "install", "-q", "--upgrade", f".[{extras}]"], cwd=ROOT)
    with open(STAMP, "w", encoding="utf-8") as fh:
        fh.write(f"{digest} {extras}\n")


def _udp_port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


def free_domain_id():
    """A ROS_DOMAIN_ID that no DDS participant on this machine is using now, picked at random.

    A participant of domain d binds the unicast discovery port 7410 + 250 d + 2 p, p = 0, 1, ...
    its index on the machine (the RTPS port mapping Fast DDS and Cyclone DDS follow): a domain
    whose first ports are all free has no participant here. Domains 1..231 (0 is everyone's
    default; above 232 the ports leave the 16-bit range), with the next domain free too.
    """
    # the node tests run a second set of processes in the next domain: both must be free
    domains = list(range(1, 232))
    random.SystemRandom().shuffle(domains)
    for domain in domains:
        if all(_udp_port_free(7410 + 250 * d + 2 * p) for d in (domain, domain + 1) for p in range(8)):
            return domain
    return domains[0]


def job_env():
    env = dict(os.environ)
    env["VIRTUAL_ENV"] = VENV
    env["PATH"] = os.path.join(VENV, "bin") + os.pathsep + env.get("PATH", "")
    env["AMENT_PREFIX_PATH"] = VENV + (os.pathsep + env["AMENT_PREFIX_PATH"] if env.get("AMENT_PREFIX_PATH") else "")
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    if not env.get("ROS_DOMAIN_ID"):
        env["ROS_DOMAIN_ID"] = str(free_domain_id())
    env.setdefault("MPLBACKEND", "Agg")
    return env


def main(argv):
    if not argv or argv[0] not in EXTRAS:
        print(__doc__)
        return 2
    job, args = argv[0], argv[1:]
    ensure_venv(EXTRAS[job])
    if job == "demo":
        cmd = [os.path.join(VENV, "bin", "hod-dynamics"), "demo"] + args
    else:  # the 25 slowest tests listed at the end, unless the arguments choose
        durations = [] if any(a.startswith("--durations") for a in args) else ["--durations=25"]
        cmd = [PY, "-m", "pytest"] + durations + args
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, env=job_env()).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
