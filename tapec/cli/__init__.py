"""The `tapec` command line."""
from .main import main  # noqa: F401
