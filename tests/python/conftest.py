"""Shared by the unit tests (no target) and the target tests (in the test
bed): the package under test is the one in python/, and the library the
plain build's unless NVMEOF_LIB names another."""
import os
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "python"))
os.environ.setdefault("NVMEOF_LIB", os.path.join(TOP, "build", "out", "libnvmeof.so"))
