"""Builds interface packages from a spec (run as a subprocess by typebuild.py).

`python -m gateway.ros.interfaces._typebuild_worker SPEC OUT [NICE]`: SPEC (JSON) holds per
package the `.msg` and `.srv` sources (already validated against the rosidl grammar by typebuild.py), the
packages they depend on (the gateway's own) and the type hashes the result must have. The
rosidl generators of the gateway's venv turn them into C, typesupport (fastrtps_c,
introspection_c, typesupport_c) and Python code, gcc compiles it, and OUT becomes an install
prefix (`lib/`, `lib/python3.X/site-packages/<pkg>/`) that `interface_paths.py` serves.
Nothing is written outside OUT. Exit status 0 with `OUT/BUILT`, else the reason on stderr.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import numpy

COMPILE_TIMEOUT_S = 120.0
_TS_IMPLS = ["rosidl_typesupport_fastrtps_c", "rosidl_typesupport_introspection_c"]


def _generate(pkg: str, sources: dict[str, dict[str, str]], work: Path,
              expect: dict[str, str]) -> Path:
    """Sources -> IDL -> type hashes (checked) -> generated code under work/gen/<kind>."""
    if "rosidl_generator_py.generate_py_impl" in sys.modules \
            and sys.modules["rosidl_generator_py.generate_py_impl"] is None:
        # gateway/ros/__init__.py leaves the generator out of the gateway; this process runs it
        del sys.modules["rosidl_generator_py.generate_py_impl"]
        sys.modules.pop("rosidl_generator_py", None)
    from rosidl_adapter.msg import (  # noqa: PLC0415 - after the reset above
        convert_msg_to_idl,
    )
    from rosidl_adapter.srv import (  # noqa: PLC0415 - after the reset above
        convert_srv_to_idl,
    )
    from rosidl_cli.command.hash.api import (  # noqa: PLC0415 - after the reset above
        generate_type_hashes,
    )
    from rosidl_generator_c.cli import GenerateC  # noqa: PLC0415 - after the reset above
    from rosidl_generator_py.cli import (  # noqa: PLC0415 - after the reset above
        GeneratePython,
    )
    from rosidl_typesupport_c.cli import (  # noqa: PLC0415 - after the reset above
        GenerateCTypesupport,
    )
    from rosidl_typesupport_fastrtps_c.cli import (  # noqa: PLC0415 - after the reset above
        GenerateFastRTPSCTypesupport,
    )
    from rosidl_typesupport_introspection_c.cli import (  # noqa: PLC0415 - after the reset above
        GenerateIntrospectionCTypesupport,
    )

    src, idl = work / "src" / pkg, work / "idl" / pkg
    files = []
    for kind, convert in (("msg", convert_msg_to_idl), ("srv", convert_srv_to_idl)):
        for name, text in sorted(sources.get(kind, {}).items()):
            (src / kind).mkdir(parents=True, exist_ok=True)
            (idl / kind).mkdir(parents=True, exist_ok=True)
            (src / kind / f"{name}.{kind}").write_text(text)
            with contextlib.redirect_stdout(io.StringIO()):
                convert(src.absolute(), pkg, Path(kind) / f"{name}.{kind}", idl / kind)
            files.append(f"{idl.absolute()}:{kind}/{name}.idl")
    include = [os.path.join(sys.prefix, "share")]
    hashes = generate_type_hashes(package_name=pkg, interface_files=files,
                                  include_paths=include, output_path=work / "td" / pkg)
    got = {}
    for path in hashes:
        for entry in json.loads(Path(path).read_text())["type_hashes"]:
            got[entry["type_name"]] = entry["hash_string"]
    for type_name, wanted in expect.items():
        if type_name.startswith(pkg + "/") and got.get(type_name) != wanted:
            raise RuntimeError(f"{type_name}: the rebuilt type hashes to {got.get(type_name)}, "
                               f"the robot's is {wanted}")
    gen = work / "gen"
    exts = [GenerateC("c"), GenerateFastRTPSCTypesupport("fastrtps_c"),
            GenerateIntrospectionCTypesupport("introspection_c"),
            GenerateCTypesupport("typesupport_c", typesupport_implementations=_TS_IMPLS),
            GeneratePython("py")]
    for ext in exts:
        extra: dict[str, Any] = {}
        if "type_description_files" in inspect.signature(ext.generate).parameters:
            extra["type_description_files"] = [str(p) for p in hashes]
        with contextlib.redirect_stdout(io.StringIO()):
            ext.generate(pkg, files, include, output_path=gen / ext.name, **extra)
    return gen


def _cc(compiler: str, sources: list[Path], out: Path, includes: list[str],
        libs: list[str], own_lib: Path | None = None) -> None:
    soname = [f"-Wl,-soname,{out.name}"] if out.name.startswith("lib") else []
    lib_dir = os.path.join(sys.prefix, "lib")
    cmd = [compiler, "-shared", "-fPIC", "-O1", "-w", *includes, *map(str, sources),
           "-o", str(out), *soname, f"-L{lib_dir}", f"-L{own_lib or out.parent}",
           f"-Wl,-rpath,{lib_dir}", "-Wl,-rpath,$ORIGIN", *[f"-l{x}" for x in libs]]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{compiler} failed for {out.name}: {done.stderr.strip()[-800:]}")


def _compile(pkg: str, deps: list[str], gen: Path, work: Path, out: Path) -> None:
    inc = work / "include" / pkg
    for kind in ("c", "fastrtps_c", "introspection_c"):
        for header in (gen / kind).rglob("*.h"):
            target = inc / header.relative_to(gen / kind)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(header, target)
    venv_inc = Path(sys.prefix) / "include"

    includes = [f"-I{work / 'include'}", f"-I{venv_inc}",
                *[f"-I{d}" for d in sorted(venv_inc.iterdir()) if d.is_dir()],
                f"-I{sysconfig.get_paths()['include']}", f"-I{numpy.get_include()}"]
    lib = out / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    site = lib / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    pkg_dir = site / pkg
    pkg_dir.mkdir(parents=True, exist_ok=True)

    def own(part: str) -> Path:
        return lib / f"lib{pkg}__{part}.so"

    def each(part: str) -> list[str]:
        return [f"{d}__{part}" for d in deps]

    runtime = ["rosidl_runtime_c", "rcutils"]
    _cc("gcc", sorted((gen / "c").rglob("*.c")), own("rosidl_generator_c"), includes,
        [*each("rosidl_generator_c"), *runtime])
    _cc("g++", sorted((gen / "fastrtps_c").rglob("*.cpp")), own("rosidl_typesupport_fastrtps_c"),
        includes, [f"{pkg}__rosidl_generator_c", *each("rosidl_typesupport_fastrtps_c"),
                   *each("rosidl_generator_c"), "rosidl_typesupport_fastrtps_c",
                   "rosidl_typesupport_fastrtps_cpp", "fastcdr", *runtime])
    _cc("gcc", sorted((gen / "introspection_c").rglob("*.c")),
        own("rosidl_typesupport_introspection_c"), includes,
        [f"{pkg}__rosidl_generator_c", *each("rosidl_typesupport_introspection_c"), *runtime])
    _cc("g++", sorted((gen / "typesupport_c").rglob("*.cpp")), own("rosidl_typesupport_c"),
        includes, ["rosidl_typesupport_c", *runtime])
    _cc("gcc", sorted((gen / "py").rglob("*_s.c")), own("rosidl_generator_py"), includes,
        [f"{pkg}__rosidl_generator_c", f"{pkg}__rosidl_typesupport_c",
         *each("rosidl_generator_py"), *each("rosidl_generator_c"), *runtime])
    ext = sysconfig.get_config_var("EXT_SUFFIX")
    _cc("gcc", [gen / "py" / f"_{pkg}_s.ep.rosidl_typesupport_c.c"],
        pkg_dir / f"{pkg}_s__rosidl_typesupport_c{ext}", includes,
        [f"{pkg}__rosidl_generator_py", f"{pkg}__rosidl_typesupport_c",
         f"{pkg}__rosidl_generator_c", *runtime], own_lib=lib)
    (pkg_dir / "__init__.py").write_text("")
    for kind in ("msg", "srv"):
        if (gen / "py" / kind).is_dir():
            shutil.copytree(gen / "py" / kind, pkg_dir / kind,
                            ignore=shutil.ignore_patterns("*.c"))


def build(spec: dict[str, Any], out: Path) -> None:
    """Build every package of `spec` into the prefix `out` (work files under out/work)."""
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    expect = spec.get("expect", {})
    for pkg, entry in spec["packages"].items():
        gen = _generate(pkg, entry["sources"], work / pkg, expect)
        _compile(pkg, entry["deps"], gen, work / pkg, out)
    shutil.rmtree(work, ignore_errors=True)
    (out / "BUILT").write_text(json.dumps(sorted(spec["packages"])))


def main(argv: list[str]) -> int:
    """Entry point: SPEC OUT [NICE] (the niceness added to this process and its compilers)."""
    spec_path, out = Path(argv[0]), Path(argv[1])
    if len(argv) > 2 and int(argv[2]) > 0:
        os.nice(int(argv[2]))  # a build started by discovery yields the CPU to the robot
    os.environ.setdefault("AMENT_PREFIX_PATH", sys.prefix)  # the generators find templates
    try:
        build(json.loads(spec_path.read_text()), out)
    except Exception as exc:  # the reason goes back to the gateway as one line
        print(f"{type(exc).__name__}: {exc}".replace("\n", " ")[-1500:], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
