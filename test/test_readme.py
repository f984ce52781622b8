"""Every ```python and ```bash block of README.md runs as written, in a fresh folder, with the
installed package (the `demo` install: no test tools needed). A block preceded immediately by
the line ``<!-- not run by test_readme: REASON -->`` is skipped (it needs ROS, a robot or a
user's file, or starts this very test suite); the test prints which and why."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = re.compile(r"<!-- not run by test_readme: (.+?) -->")
FENCE = re.compile(r"^( *)```(\w*)\s*$")


def readme_blocks(path=os.path.join(ROOT, "README.md")):
    """[(language, first line number, code, skip reason or None)] of the fenced blocks."""
    lines = open(path, encoding="utf-8").read().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or not m.group(2):
            i += 1
            continue
        indent, lang, start = len(m.group(1)), m.group(2), i + 1
        j = start
        while not re.match(r"^ *```\s*$", lines[j]):
            j += 1
        code = "\n".join(line[indent:] for line in lines[start:j]) + "\n"
        skip = SKIP.fullmatch(lines[i - 1].strip()) if i > 0 else None
        blocks.append((lang, start, code, skip.group(1) if skip else None))
        i = j + 1
    return blocks


BLOCKS = [b for b in readme_blocks() if b[0] in ("python", "bash")]


def test_the_readme_has_runnable_blocks():
    assert sum(1 for b in BLOCKS if b[3] is None and b[0] == "python") >= 1
    assert sum(1 for b in BLOCKS if b[3] is None and b[0] == "bash") >= 1


@pytest.mark.parametrize("lang, line, code, skip", BLOCKS, ids=[f"{b[0]}-line{b[1]}" for b in BLOCKS])
def test_readme_block_runs_as_written(lang, line, code, skip, tmp_path):
    if skip:
        print(f"README.md line {line} ({lang}) not run: {skip}")
        pytest.skip(f"README.md line {line}: {skip}")
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-c", code] if lang == "python" else ["bash", "-euo", "pipefail", "-c", code]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"README.md line {line} ({lang}) failed:\n{code}\n{run.stdout}\n{run.stderr}"
    assert "Traceback" not in run.stderr
