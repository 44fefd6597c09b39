"""The package version, in a module of its own so that the wrapper's cache
keys can read it without importing the package's entry points (jit)."""
__version__ = "0.1.0"
