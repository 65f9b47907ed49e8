"""pip install for lazygrad's Python package: setuptools drives the project's CMake build.

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation .

builds the extension module lazygrad._C with CMake (the interpreter running pip is the one it is
built for) and installs it with the pure-Python package python/lazygrad/. Offline: nothing is
downloaded (Debian's pybind11-dev, python3-dev and cmake are used). setuptools' own build folder is
build/pip (build/ is the CMake build tree; this keeps the two apart); CMAKE_BUILD_PARALLEL_LEVEL
sets the compile jobs (default: the core count).
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(self.build_temp).resolve() / "cmake"
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)
        subprocess.check_call([
            "cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
            "-DLAZYGRAD_BUILD_TESTS=OFF", "-DLAZYGRAD_BUILD_BENCH=OFF", "-DLAZYGRAD_PYTHON=ON",
            f"-DPython_EXECUTABLE={sys.executable}",
        ])
        subprocess.check_call(["cmake", "--build", str(build), "--target", "lazygrad_python", "-j", jobs])
        built = next((build / "python" / "lazygrad").glob("_C*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)
        # The CPU's in-process compiler, a module of its own (built with lazygrad where LLVM 19 is
        # installed): the extension looks for it beside itself.
        compiler = build / "liblazygrad_llvm.so"
        if compiler.exists():
            shutil.copyfile(compiler, target.parent / compiler.name)


setup(
    name="lazygrad",
    version="0.1.0",
    description="Lazy tensors with fused, run-time compiled kernels",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[Extension("lazygrad._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    zip_safe=False,
    options={"build": {"build_base": "build/pip"}},
)
