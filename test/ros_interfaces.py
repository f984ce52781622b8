"""ROS 2 interface packages built for the tests from their .msg / .action files, where no wheel
exists (control_msgs, for FollowJointTrajectory): CMake with ament_cmake and the rosidl
generators of the PyPI ``ros-*`` wheels the test extra installs, the generated C compiled by the
machine's compiler, into a prefix cached under ``~/.cache/hod_dynamics_tests`` (keyed by the
files, the wheels' versions and this script), so a machine builds it once (about 30 s on two
cores).

Two things the wheels leave to their user, found building them here:

- the message packages export include directories of the container they were built in
  (``/opt/python/cp311-cp311/include/...``), which CMake refuses at its generate step: the
  package's CMakeLists drops include directories that do not exist from every imported target;
- ``rosidl_typesupport_c`` opens the concrete type support library by name (``dlopen``), which
  does not search a library's RUNPATH: the built libraries get an ``$ORIGIN`` RUNPATH and the
  dispatch libraries link the concrete ones, so that they are loaded already when asked for.
"""

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

VERSION = "1"  # of this build recipe: part of the cache key
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hod_dynamics_tests"

_CMAKE_FIXES = r'''
get_property(_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
foreach(_target IN LISTS _imported)
  get_target_property(_dirs ${_target} INTERFACE_INCLUDE_DIRECTORIES)
  if(_dirs)
    set(_kept)
    foreach(_dir IN LISTS _dirs)
      if(EXISTS "${_dir}" OR _dir MATCHES "^\\$<")
        list(APPEND _kept "${_dir}")
      endif()
    endforeach()
    set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_kept}")
  endif()
endforeach()
get_property(_built DIRECTORY PROPERTY BUILDSYSTEM_TARGETS)
foreach(_target IN LISTS _built)
  get_target_property(_type ${_target} TYPE)
  if(_type STREQUAL "SHARED_LIBRARY" OR _type STREQUAL "MODULE_LIBRARY")
    set_target_properties(${_target} PROPERTIES INSTALL_RPATH "$ORIGIN;$ORIGIN/../../..")
  endif()
endforeach()
foreach(_language c cpp)
  foreach(_support fastrtps introspection)
    if(TARGET ${PROJECT_NAME}__rosidl_typesupport_${_language} AND
       TARGET ${PROJECT_NAME}__rosidl_typesupport_${_support}_${_language})
      target_link_libraries(${PROJECT_NAME}__rosidl_typesupport_${_language} PRIVATE "-Wl,--no-as-needed"
                            ${PROJECT_NAME}__rosidl_typesupport_${_support}_${_language} "-Wl,--as-needed")
    endif()
  endforeach()
endforeach()
'''


def missing_tools():
    """What the build needs and this machine lacks ('' when nothing): cmake, a C compiler, the
    generator wheels."""
    lacking = [tool for tool in ("cmake", "cc") if shutil.which(tool) is None]
    share = Path(sys.prefix) / "share"
    lacking += [f"the {pkg} wheel" for pkg in ("ament_cmake", "rosidl_default_generators")
                if not (share / pkg / "cmake").is_dir()]
    return ", ".join(lacking)


def _dependencies(files):
    """The interface packages the files use (besides themselves)."""
    deps = set()
    for path in files:
        for line in path.read_text().splitlines():
            field = line.split("#", 1)[0].split()
            if field and "/" in field[0]:
                deps.add(field[0].split("/")[0])
        if path.suffix == ".action":
            deps |= {"action_msgs", "builtin_interfaces", "unique_identifier_msgs", "service_msgs"}
    return sorted(deps)


def build(src, name):
    """The prefix holding interface package ``name`` built from the msg/ and action/ files under
    ``src`` (built when the cache has none for these inputs). Its Python package is in
    :func:`site_packages` of the prefix."""
    src = Path(src)
    files = sorted(p for p in src.glob("*/*") if p.suffix in (".msg", ".action", ".srv"))
    versions = subprocess.run([sys.executable, "-m", "pip", "list", "--format=json"], capture_output=True,
                              text=True, check=True).stdout
    key = hashlib.sha256(json.dumps([VERSION, name, sys.version, sorted(
        (d["name"], d["version"]) for d in json.loads(versions) if d["name"].startswith("ros-")),
        [(p.relative_to(src).as_posix(), p.read_text()) for p in files]]).encode()).hexdigest()[:16]
    prefix = CACHE / f"{name}-{key}"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # several test processes may build at once
        if (prefix / "built").is_file():
            return prefix
        _build(src, files, name, prefix)
        (prefix / "built").write_text(key)
    return prefix


def _build(src, files, name, prefix):
    deps = _dependencies(files)
    work = Path(tempfile.mkdtemp(prefix=f"{name}_"))
    try:
        stage = work / "src"
        for path in files:
            (stage / path.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, stage / path.parent.name / path.name)
        listed = " ".join(f"{p.parent.name}/{p.name}" for p in files)
        (stage / "CMakeLists.txt").write_text(
            f"cmake_minimum_required(VERSION 3.16)\nproject({name})\nfind_package(ament_cmake REQUIRED)\n"
            "find_package(rosidl_default_generators REQUIRED)\n"
            + "".join(f"find_package({d} REQUIRED)\n" for d in deps)
            + f"rosidl_generate_interfaces(${{PROJECT_NAME}} {listed} DEPENDENCIES {' '.join(deps)})\n"
            + _CMAKE_FIXES + "ament_export_dependencies(rosidl_default_runtime)\nament_package()\n")
        (stage / "package.xml").write_text(
            f'<?xml version="1.0"?>\n<package format="3"><name>{name}</name><version>0.0.0</version>'
            f"<description>{name} for the tests</description><maintainer email=\"tests@example.invalid\">tests"
            "</maintainer><license>BSD-3-Clause</license><buildtool_depend>ament_cmake</buildtool_depend>"
            "<buildtool_depend>rosidl_default_generators</buildtool_depend>"
            + "".join(f"<depend>{d}</depend>" for d in deps)
            + "<member_of_group>rosidl_interface_packages</member_of_group>"
            "<export><build_type>ament_cmake</build_type></export></package>\n")
        env = dict(os.environ, AMENT_PREFIX_PATH=sys.prefix, CMAKE_PREFIX_PATH=sys.prefix,
                   PATH=os.path.join(sys.prefix, "bin") + os.pathsep + os.environ.get("PATH", ""),
                   LD_LIBRARY_PATH=os.path.join(sys.prefix, "lib"))
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        for step in (["cmake", "-S", stage, "-B", work / "build", *generator, f"-DCMAKE_INSTALL_PREFIX={prefix}",
                      "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF", f"-DPython3_EXECUTABLE={sys.executable}"],
                     ["cmake", "--build", work / "build", "-j", str(os.cpu_count() or 2)],
                     ["cmake", "--install", work / "build"]):
            done = subprocess.run([str(x) for x in step], env=env, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"building {name} failed at `{' '.join(map(str, step[:2]))}`:\n"
                                   + (done.stderr or done.stdout)[-3000:])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def site_packages(prefix):
    """The folder of the built package's Python modules."""
    return str(Path(prefix) / os.path.relpath(sysconfig.get_paths()["purelib"], sys.prefix))


def environment(prefix):
    """Environment variables that let another process import the built package."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [site_packages(prefix), os.environ.get("PYTHONPATH")])),
            "AMENT_PREFIX_PATH": os.pathsep.join(filter(None, [str(prefix), os.environ.get("AMENT_PREFIX_PATH")]))}
