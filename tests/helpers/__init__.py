"""Helpers shared by the test files (``from helpers import fd``); tests/ is on sys.path
through pytest's rootdir conftest."""
