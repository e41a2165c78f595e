"""A file-backend server refuses a data directory on a volume that folds case, on a real vfat file system.

``Case-Run`` and ``case-run`` are two runs; on vfat (as on macOS's default
APFS) their journals would be one file, and the second run would read and
append to the first's records. The vfat volume is made in the test: an image
formatted by ``mkfs.vfat`` (Debian's dosfstools), mounted through a loop
device where the kernel has vfat and we are root, else through ``fusefat``
(FUSE). A machine that can do neither skips, even under CI; one that can but
fails to is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from runjournal.v1 import journal_service_pb2 as pb
from runjournal.v1 import journal_service_pb2_grpc
from runjournal_server.backends.file.casing import folds_case
from tests.durability.harness import CALL_TIMEOUT_SECONDS
from tests.servers import ServerProcess
from tests.support import builders as b

IMAGE_BYTES = 32 * 1024 * 1024


def _kernel_has_vfat() -> bool:
    try:
        return any(line.split()[-1] == "vfat" for line in Path("/proc/filesystems").read_text().splitlines())
    except OSError:
        return False


def _mount_commands(image: Path, mount: Path) -> tuple[list[str], list[str]] | str:
    """How to mount and unmount a vfat image here, or why this machine cannot."""
    if shutil.which("mkfs.vfat") is None:
        return "mkfs.vfat not found (Debian: apt-get install dosfstools)"
    if os.geteuid() == 0 and _kernel_has_vfat() and shutil.which("mount") and shutil.which("losetup"):
        return ["mount", "-t", "vfat", "-o", "loop", str(image), str(mount)], ["umount", str(mount)]
    fusermount = shutil.which("fusermount") or shutil.which("fusermount3")
    if shutil.which("fusefat") and fusermount and os.access("/dev/fuse", os.R_OK | os.W_OK):
        return ["fusefat", "-o", "rw+", str(image), str(mount)], [fusermount, "-u", str(mount)]
    return "no way to mount vfat: neither a kernel with vfat (as root, with a loop device) nor fusefat and /dev/fuse"


def outcome(what: str, method: Callable[..., object], request: object) -> str:
    try:
        method(request, timeout=CALL_TIMEOUT_SECONDS)
    except grpc.RpcError as err:
        return f"{what}: {err.code().name} {err.details()}"  # type: ignore[attr-defined]
    return f"{what}: ok"


@pytest.fixture
def vfat_dir(tmp_path: Path) -> Iterator[Path]:
    """An empty directory on a vfat file system made for this test."""
    image, mount = tmp_path / "vfat.img", tmp_path / "vfat"
    mount.mkdir()
    commands = _mount_commands(image, mount)
    if isinstance(commands, str):
        pytest.skip(f"this machine cannot make a case-folding file system: {commands}")
    mount_command, unmount_command = commands
    with image.open("wb") as sparse:
        sparse.truncate(IMAGE_BYTES)
    made = subprocess.run(["mkfs.vfat", str(image)], capture_output=True, text=True, check=False)
    mounted = made.returncode == 0 and subprocess.run(mount_command, capture_output=True, check=False).returncode == 0
    if not mounted or not os.path.ismount(mount):
        pytest.fail(f"this machine can make a vfat volume but did not ({made.stderr.strip()}): {mount_command}")
    try:
        yield mount
    finally:
        subprocess.run(unmount_command, capture_output=True, check=False)


def test_the_probe_finds_that_vfat_folds_case(vfat_dir: Path) -> None:
    assert folds_case(vfat_dir)
    assert os.listdir(vfat_dir) == []


def test_a_server_on_a_vfat_data_directory_refuses_to_start_and_writes_no_journal(vfat_dir: Path) -> None:
    server = ServerProcess(vfat_dir / "data")
    try:
        server.start()
    except RuntimeError as refused:
        assert "is on a case-insensitive file system" in str(refused), str(refused)
        assert "'Case-Run' and 'case-run' would share one journal file" in str(refused)
        assert [path.name for path in (vfat_dir / "data").iterdir()] == []
        return
    try:  # it started: show what the volume does to two runs whose ids differ in case
        with grpc.insecure_channel(server.address) as channel:
            stub = journal_service_pb2_grpc.JournalServiceStub(channel)
            outcomes = []
            for run_id in ("Case-Run", "case-run"):
                request = pb.AppendRequest(run_id=run_id, claim_token=1, record=b.meta(run_id=run_id))
                outcomes.append(outcome(f"Append({run_id!r})", stub.Append, request))
                outcomes.append(outcome(f"Fold({run_id!r})", stub.Fold, pb.FoldRequest(run_id=run_id)))
    finally:
        server.stop()
    pytest.fail("the server started on a volume that folds case: " + "; ".join(outcomes))
