"""Update package checks (pure): registration rules, links, expansion caps, pruning names."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

import pytest

from gateway.updates import rules
from gateway.updates.package import Limits, PackageError, unpack


def tar_file(path: Path, members: list[tuple[str, bytes | None, str | None, bytes]]) -> Path:
    """members: (name, data or None, link type 'sym'/'hard' or None, link target)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind, target in members:
            info = tarfile.TarInfo(name)
            if kind == "sym":
                info.type, info.linkname = tarfile.SYMTYPE, target.decode()
            elif kind == "hard":
                info.type, info.linkname = tarfile.LNKTYPE, target.decode()
            info.size = len(data or b"")
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


@pytest.mark.parametrize(("kind", "target", "ok"), [
    ("sym", b"version.txt", True),
    ("sym", b"../app/version.txt", True),
    ("sym", b"/etc/passwd", False),
    ("sym", b"../../etc/passwd", False),
    ("hard", b"app/version.txt", True),
    ("hard", b"/etc/passwd", False),
    ("hard", b"../outside", False),
])
def test_links_must_stay_inside_the_package(tmp_path: Path, kind: str, target: bytes,
                                            ok: bool) -> None:
    archive = tar_file(tmp_path / "p.tar.gz", [("app/version.txt", b"1", None, b""),
                                              ("app/link", None, kind, target)])
    dest = tmp_path / "staged"
    if ok:
        assert unpack(archive, dest) == ["app"]
    else:
        with pytest.raises(PackageError, match="outside the package"):
            unpack(archive, dest)


def test_expansion_caps_bytes_ratio_and_members(tmp_path: Path) -> None:
    zeros = tar_file(tmp_path / "z.tar.gz", [("zeros", bytes(1 << 20), None, b"")])
    with pytest.raises(PackageError, match="max_expansion_ratio"):
        unpack(zeros, tmp_path / "a", Limits(max_bytes=1 << 30, max_ratio=10))
    with pytest.raises(PackageError, match="max_unpacked_bytes"):
        unpack(zeros, tmp_path / "b", Limits(max_bytes=1000, max_ratio=1e6))
    many = tar_file(tmp_path / "m.tar.gz", [(f"f{n}", b"", None, b"") for n in range(20)])
    with pytest.raises(PackageError, match="more than 10 members"):
        unpack(many, tmp_path / "c", Limits(max_members=10))
    zpath = tmp_path / "z.zip"
    with zipfile.ZipFile(zpath, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros", bytes(1 << 20))
    with pytest.raises(PackageError, match="max_expansion_ratio"):
        unpack(zpath, tmp_path / "d", Limits(max_ratio=10))
    assert unpack(zeros, tmp_path / "e", Limits(max_ratio=2000)) == ["zeros"]


def test_a_damaged_archive_is_a_package_error(tmp_path: Path) -> None:
    good = tar_file(tmp_path / "g.tar.gz", [("f", b"x" * 5000, None, b"")]).read_bytes()
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(good[: len(good) // 2])
    with pytest.raises(PackageError, match="cannot be unpacked|is refused"):
        unpack(broken, tmp_path / "x")


@pytest.mark.parametrize("hook", ["/bin/sh", "../x.sh", "a/../../x.sh", "", "a\\..\\x"])
def test_hooks_are_relative_paths_inside_the_package(hook: str) -> None:
    with pytest.raises(rules.RuleError, match="post_install"):
        rules.hook_path(hook)
    assert rules.hook_path("scripts/post.sh") == PurePosixPath("scripts/post.sh")


def test_a_hook_symlinked_out_of_the_release_is_refused(tmp_path: Path) -> None:
    release = tmp_path / "rel"
    release.mkdir()
    (release / "post.sh").symlink_to("/bin/true")
    with pytest.raises(rules.RuleError, match="outside the package"):
        rules.hook_inside(release, PurePosixPath("post.sh"))


def test_package_paths_only_under_package_dirs(tmp_path: Path) -> None:
    (tmp_path / "pkgs").mkdir()
    (tmp_path / "pkgs" / "p.tgz").write_bytes(b"x")
    (tmp_path / "pkgs" / "escape").symlink_to("/etc/hostname")
    with pytest.raises(rules.RuleError, match="package_dirs is empty"):
        rules.allowed_path(str(tmp_path / "pkgs" / "p.tgz"), [])
    assert rules.allowed_path(str(tmp_path / "pkgs" / "p.tgz"), [str(tmp_path / "pkgs")])
    for bad in ("/etc/hostname", str(tmp_path / "pkgs" / "escape"),
                str(tmp_path / "pkgs" / ".." / "other")):
        with pytest.raises(rules.RuleError, match="not under"):
            rules.allowed_path(bad, [str(tmp_path / "pkgs")])


def test_registration_fields_of_the_spec() -> None:
    spec = {"id": "u", "update_name": "n", "automated": False, "origins": ["remote"],
            "duration": 5, "size": 10.5, "updated_components": ["a"],
            "affected_components": []}
    rules.check_registration(spec, [])  # no package: metadata only
    for key, bad in (("automated", "yes"), ("origins", "remote"), ("size", True),
                     ("update_name", 3)):
        with pytest.raises(rules.RuleError, match=f"'{key}'"):
            rules.check_registration({**spec, key: bad}, [])
    with pytest.raises(rules.RuleError, match="sha256"):
        rules.check_registration({**spec, "package": {"bulk_data": "p/1"}}, [])


def test_redaction_replaces_every_secret() -> None:
    text = "token=abcdefgh12345678 and again abcdefgh12345678; short=abc"
    out = rules.redact(text, {"abcdefgh12345678", "abc", ""})
    assert "abcdefgh12345678" not in out and out.count(rules.REDACTED) == 2
    assert "short=abc" in out  # values under 4 characters are not matched
