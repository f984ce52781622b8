"""Every ```python and ```bash block of README.md and doc/*.md runs as written, in a fresh
folder, with the installed package (the `demo` install: no test tools needed). A block preceded
immediately by the line ``<!-- not run by test_readme: REASON -->`` is skipped (it needs ROS, a
robot or a user's file, or starts this very test suite); the test prints which and why. The
README stays short, the pages say nothing about how the package is developed, and every link
between them leads to a file that exists."""

import glob
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


PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "doc", "*.md")))
BLOCKS = [(page,) + b for page in PAGES for b in readme_blocks(os.path.join(ROOT, page)) if b[0] in ("python", "bash")]
# words about how the package is made, which a user has no use for
DEVELOPMENT_WORDS = re.compile(r"development machine|\bVM\b|\.ci/run|\[fast\]|project's (speed )?targets|"
                               r"REFERENCE\.md|\bseed \d|\bissue \d", re.IGNORECASE)


def test_the_readme_has_runnable_blocks():
    readme = [b for b in BLOCKS if b[0] == "README.md" and b[4] is None]
    assert sum(1 for b in readme if b[1] == "python") >= 1
    assert sum(1 for b in readme if b[1] == "bash") >= 1


def test_the_readme_is_short_and_the_pages_exist():
    lines = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines: move the details into doc/"
    for page in ["python_api", "ros2_interface", "command_line", "bag_analysis", "robot_descriptions",
                 "loops", "speed", "ARCHITECTURE"]:
        assert f"(doc/{page}.md)" in "\n".join(lines), f"README.md does not link doc/{page}.md"


@pytest.mark.parametrize("page", PAGES)
def test_pages_say_nothing_about_the_development_process(page):
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    found = [m.group(0) for m in DEVELOPMENT_WORDS.finditer(text)]
    assert not found, f"{page}: {found}"


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_lead_to_files(page):
    text = open(os.path.join(ROOT, page), encoding="utf-8").read()
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
        path = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), target))
        assert os.path.exists(path), f"{page} links {target}, which does not exist"


def test_every_shipped_robot_is_listed():
    import hod_dynamics as hd

    text = open(os.path.join(ROOT, "doc", "robot_descriptions.md"), encoding="utf-8").read()
    for name in hd.shipped_robots():
        assert f"| `{name}` |" in text, f"doc/robot_descriptions.md does not list the shipped model {name}"


@pytest.mark.parametrize("page, lang, line, code, skip", BLOCKS, ids=[f"{b[0]}-{b[1]}-line{b[2]}" for b in BLOCKS])
def test_readme_block_runs_as_written(page, lang, line, code, skip, tmp_path):
    if skip:
        print(f"{page} line {line} ({lang}) not run: {skip}")
        pytest.skip(f"{page} line {line}: {skip}")
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    cmd = [sys.executable, "-c", code] if lang == "python" else ["bash", "-euo", "pipefail", "-c", code]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{page} line {line} ({lang}) failed:\n{code}\n{run.stdout}\n{run.stderr}"
    assert "Traceback" not in run.stderr
