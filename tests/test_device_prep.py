"""scripts/device_prep.sh slims what the device tool sends and restores the checkout after."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device_prep.sh"
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def sh(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git checkout with the script, a small source file and 4.5 MiB of study artifacts."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / "device_prep.sh")
    (tmp_path / "nco.py").write_text("x = 1\n")
    for folder in ("data/reproduction/tsp20", "data/results", "data/light"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "big.bin").write_bytes(b"\1" * 1536 * 1024)
    sh("git", "init", "-q", cwd=tmp_path)
    sh("git", "add", ".", cwd=tmp_path)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init", cwd=tmp_path)
    return tmp_path


def sent(repo: Path) -> set[str]:
    """The files the device tool sends: tracked, or untracked and not ignored."""
    out = sh("git", "ls-files", "--cached", "--others", "--exclude-standard", cwd=repo).stdout
    return {line for line in out.splitlines() if (repo / line).is_file()}


def test_slim_sends_no_study_files_refuses_commits_and_restore_undoes_it(repo: Path) -> None:
    before = sent(repo)
    assert "data/reproduction/tsp20/big.bin" in before
    assert "4 MiB" in sh("bash", "scripts/device_prep.sh", "size", cwd=repo).stdout
    sh("bash", "scripts/device_prep.sh", "slim", cwd=repo)
    assert sent(repo) == {"nco.py", "scripts/device_prep.sh"}
    assert (repo / "data/reproduction/tsp20/big.bin").is_file()  # still on disk
    assert "0 MiB" in sh("bash", "scripts/device_prep.sh", "size", cwd=repo).stdout
    commit = sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "oops",
                cwd=repo, check=False)  # fmt: skip
    assert commit.returncode != 0 and "restore" in commit.stderr
    sh("bash", "scripts/device_prep.sh", "restore", cwd=repo)
    assert sent(repo) == before
    assert sh("git", "status", "--porcelain", cwd=repo).stdout == ""
    assert not (repo / ".git/hooks/pre-commit").exists()


def test_size_fails_over_the_limit_and_bad_arguments_are_refused(repo: Path) -> None:
    (repo / "huge.bin").write_bytes(b"\0" * (65 * 1048576))
    size = sh("bash", "scripts/device_prep.sh", "size", cwd=repo, check=False)
    assert size.returncode == 1 and "slim" in size.stderr
    bad = sh("bash", "scripts/device_prep.sh", "shrink", cwd=repo, check=False)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_slim_keeps_a_foreign_pre_commit_hook(repo: Path) -> None:
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    proc = sh("bash", "scripts/device_prep.sh", "slim", cwd=repo, check=False)
    assert proc.returncode == 1 and "pre-commit" in proc.stderr
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"
    assert "data/results/big.bin" in sent(repo)


def test_slim_works_where_git_made_no_hooks_folder(repo: Path) -> None:
    """A clone without .git/hooks (seen on this machine) still gets the commit guard."""
    shutil.rmtree(repo / ".git/hooks", ignore_errors=True)
    sh("bash", "scripts/device_prep.sh", "slim", cwd=repo)
    assert sent(repo) == {"nco.py", "scripts/device_prep.sh"}
    assert (repo / ".git/hooks/pre-commit").is_file()
    sh("bash", "scripts/device_prep.sh", "restore", cwd=repo)
    assert sh("git", "status", "--porcelain", cwd=repo).stdout == ""
