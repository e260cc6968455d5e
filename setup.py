"""Builds the compiled twins: each pure-Python hot path compiled a second time by Cython.

Environment switches:
- DIAG_GATEWAY_NO_EXT=1       build no extension (pure Python only).
- DIAG_GATEWAY_REQUIRE_EXT=1  a failed build is an error (CI and ``make test``).
Otherwise a failed build (no Cython, no C compiler) warns and installs pure Python.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# Cython finds a .pxd by the module's base name, so each pure source is staged here
# under the compiled name, next to its .pxd, and compiled from there.
STAGE = Path("build") / "cython-src"

# (package, pure modules, compiled module): one line per twin. A twin kept in several pure
# modules (each under 600 lines) is compiled as one module: the parts are joined in this
# order, each part's "# twin: joined-begin" ... "# twin: joined-end" block (its imports of
# the earlier parts) and later `from __future__` lines dropped.
TWINS = [
    ("gateway._fast",
     ("_msgconv_tables", "_msgconv_floats", "_msgconv_digits", "_msgconv_cursor", "msgconv_py"),
     "msgconv_c"),
    ("gateway._fast", ("wirejudge_py",), "wirejudge_c"),
    ("recorder", ("ringbuf_py",), "ringbuf_c"),
]

COMPILER_DIRECTIVES = {"language_level": 3, "cdivision": True}
# GCC at -O3 leaves the digit search and the digit writers as calls inside the float loops;
# allowed to grow functions further, it inlines them (about 8% fewer instructions per
# message, callgrind). Other compilers get their defaults.
GCC_INLINE_FLAGS = [
    "-finline-limit=1000",
    "--param=large-function-growth=1000",
    "--param=inline-unit-growth=400",
]


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def join_parts(texts: list[str]) -> str:
    """One module from the pure parts of a twin (see TWINS)."""
    out: list[str] = []
    for k, text in enumerate(texts):
        skipping = False
        for line in text.splitlines(keepends=True):
            if line.startswith("# twin: joined-begin"):
                skipping = True
            elif line.startswith("# twin: joined-end"):
                skipping = False
            elif not skipping and not (k and line.startswith("from __future__ import")):
                out.append(line)
        out.append("\n\n")
    return "".join(out)


def _stage(package: str, parts: tuple[str, ...], compiled: str) -> str:
    """Writes the joined parts as ``compiled``.py beside a copy of its .pxd; returns the path."""
    src_dir = ROOT.joinpath(*package.split("."))
    dst_dir = ROOT / STAGE / Path(*package.split("."))
    dst_dir.mkdir(parents=True, exist_ok=True)
    source = join_parts([(src_dir / f"{p}.py").read_text() for p in parts]).encode()
    pxd = (src_dir / f"{compiled}.pxd").read_bytes()
    for dst, data in ((f"{compiled}.py", source), (f"{compiled}.pxd", pxd)):
        target = dst_dir / dst
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)  # rewrite only on change: keeps Cython's cache valid
    return str((STAGE / Path(*package.split(".")) / f"{compiled}.py").as_posix())


def _extensions() -> list[Extension]:
    if _flag("DIAG_GATEWAY_NO_EXT"):
        return []
    return [
        Extension(f"{package}.{compiled}", [_stage(package, parts, compiled)])
        for package, parts, compiled in TWINS
    ]


class OptionalBuildExt(build_ext):
    """Cythonizes then compiles; without DIAG_GATEWAY_REQUIRE_EXT a failure falls back to pure."""

    def run(self) -> None:
        if not self.extensions:
            return
        try:
            from Cython.Build import cythonize  # noqa: PLC0415 - a missing Cython falls back

            compiled = cythonize(
                self.extensions, compiler_directives=COMPILER_DIRECTIVES, quiet=True
            )
            for ext, c_ext in zip(self.extensions, compiled, strict=True):
                ext.sources = c_ext.sources  # keep setuptools' own Extension objects
            super().run()
        except Exception as exc:  # any failure means: no compiled twin
            self._fallback(exc, self.extensions)

    def build_extension(self, ext: Extension) -> None:
        command = getattr(self.compiler, "compiler_so", None) or ["cc"]
        if "gcc" in Path(command[0]).name:
            ext.extra_compile_args = [*ext.extra_compile_args, *GCC_INLINE_FLAGS]
        try:
            super().build_extension(ext)
        except Exception as exc:  # compiler missing or failing
            self._fallback(exc, [ext])
            return
        # Newer than its sources even when up to date: gateway._fast warns about stale builds.
        os.utime(self.get_ext_fullpath(ext.name))

    def _fallback(self, exc: BaseException, failed: list[Extension]) -> None:
        if _flag("DIAG_GATEWAY_REQUIRE_EXT"):
            raise exc
        for ext in failed:
            # A module left by an earlier build (in build/ or, editable, beside the .py)
            # would be packaged or imported instead of the pure twin.
            Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
        names = ", ".join(ext.name for ext in failed)
        print(
            f"WARNING: could not build {names} ({type(exc).__name__}: {exc}); "
            "installing the pure-Python twin, which is slower",
            file=sys.stderr,
        )


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
