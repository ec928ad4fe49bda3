"""goat's standard library: the .mg files in this folder, found by ``import NAME``.

(Python sees this folder as the package ``goat.stdlib`` only so that the files are installed
with goat; it holds no Python code.)
"""
