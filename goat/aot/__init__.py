"""Ahead-of-time compilation: a checked program lowered to LLVM (llvmlite), optimised for the
host and linked with goat's C runtime into a native executable (``goat compile --aot``,
``goat run --aot``).  See goat/aot/lower.py for the lowering, goat/aot/kernels.py for the
ops' kernels and goat/aot/build.py for the pipeline.  Importing this package imports nothing
heavy; llvmlite is loaded when a program is compiled."""
