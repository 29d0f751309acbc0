"""The one error type a broken lesson or a broken build raises."""

from pathlib import Path


class BuildError(Exception):
    """Fails the build with a message a contributor can act on."""


class LessonError(BuildError):
    """A problem at a place in a lesson file: prints as `lessons/<file>.md:<line>: <message>`."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        self.path = path
        self.line = line
        self.message = message
        super().__init__(f"{display_path(path)}:{line}: {message}")


def display_path(path: Path) -> str:
    """The path relative to the working directory when it lies below it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
