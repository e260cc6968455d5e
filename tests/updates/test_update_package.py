"""Update package files: checksum, safe unpacking, atomic link swap, post-install script."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from gateway.updates import package
from gateway.updates.package import PackageError


def tarball(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_verify_accepts_the_right_sum_only(tmp_path: Path) -> None:
    f = tmp_path / "p.bin"
    f.write_bytes(b"payload")
    seen: list[float] = []
    package.verify(f, hashlib.sha256(b"payload").hexdigest().upper(), seen.append)
    assert seen and seen[-1] == 1.0
    with pytest.raises(PackageError, match="SHA-256 mismatch"):
        package.verify(f, "0" * 64)
    with pytest.raises(PackageError, match="does not exist"):
        package.verify(tmp_path / "missing", "0" * 64)


def test_unpack_tar_zip_and_plain_files(tmp_path: Path) -> None:
    t = tarball(tmp_path / "a.tar.gz", {"bin/run": b"x", "etc/conf": b"y"})
    assert package.unpack(t, tmp_path / "s1") == ["bin", "etc"]
    z = tmp_path / "b.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("lib/x.so", b"z")
    assert package.unpack(z, tmp_path / "s2") == ["lib"]
    plain = tmp_path / "firmware.bin"
    plain.write_bytes(b"fw")
    assert package.unpack(plain, tmp_path / "s3") == ["firmware.bin"]


def test_unpack_refuses_members_leaving_staging(tmp_path: Path) -> None:
    t = tarball(tmp_path / "evil.tar", {"../../escape": b"x"})
    with pytest.raises(PackageError, match="escape"):
        package.unpack(t, tmp_path / "stage")
    assert not (tmp_path / "escape").exists()
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../out", b"x")
    with pytest.raises(PackageError):
        package.unpack(z, tmp_path / "stage2")


def test_swap_link_replaces_the_target_and_refuses_foreign_trees(tmp_path: Path) -> None:
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    v1.mkdir()
    v2.mkdir()
    link = tmp_path / "app"
    assert package.swap_link(link, v1) is None
    assert package.swap_link(link, v2) == v1
    assert os.readlink(link) == str(v2)
    foreign = tmp_path / "real"
    foreign.mkdir()
    with pytest.raises(PackageError, match="not a symlink"):
        package.swap_link(foreign, v1)


def test_post_install_script(tmp_path: Path) -> None:
    (tmp_path / "ok.sh").write_text('echo "$UPDATE_ID" > marker\n')
    package.run_script(tmp_path, PurePosixPath("ok.sh"), {"UPDATE_ID": "u7"}, 10)
    assert (tmp_path / "marker").read_text().strip() == "u7"
    (tmp_path / "bad.sh").write_text("echo oops >&2; exit 4\n")
    with pytest.raises(PackageError, match="exited with 4: oops"):
        package.run_script(tmp_path, PurePosixPath("bad.sh"), {}, 10)
    (tmp_path / "slow.sh").write_text("sleep 5\n")
    with pytest.raises(PackageError, match="did not finish"):
        package.run_script(tmp_path, PurePosixPath("slow.sh"), {}, 0.2)
    with pytest.raises(PackageError, match="not in the package"):
        package.run_script(tmp_path, PurePosixPath("none.sh"), {}, 1)
