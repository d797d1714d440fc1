"""CuPy runtime and GPU engines. Importing this package never requires CuPy; the engines do."""
