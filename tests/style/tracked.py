"""The files the style checks (file_length.py, format.py) look at."""
import os
import subprocess


def tracked_files(root):
    """The files git tracks under root; without git (a source archive), every file outside
    hidden and build folders."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(dirpath, f), root) for f in filenames]
        return files
