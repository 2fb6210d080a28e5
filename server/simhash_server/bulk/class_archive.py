"""Class-data sharing for the job's JVM (the JDK's AppCDS, JEP 310 and JEP 350): the classes it loads from the
job's jars are archived, parsed and verified, when its first run exits, and the next runs map that archive
instead of reading and verifying the same classes again.

An archive is kept in the user's cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``, then
``simhash-index/class-archives``) under a key of the JVM and the jars (path, size, modification time), so a
rebuilt jar or another JDK starts a new one. The JVM checks an archive against its class path itself and runs
without it when they differ. A run writes its archive under a name of its own, renamed into place once the
JVM has exited, so that runs side by side never read one half written.

The JVM archives only classes loaded from the class path's leading jars, and refuses a non-empty directory
before them: the configuration directories go after the jars.

JDK 17 can crash mapping a dynamic archive while a class-file hook is on (Flight Recorder, a Java agent: the
JVM aborts in ``KlassFactory::check_shared_class_file_load_hook``). So no archive is used or written when the
JVM's option variables start either, and an archive whose JVM died of a crash is set aside for good.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import uuid
from pathlib import Path

__all__ = ["KEEP", "LOG_FLAGS", "ClassArchive", "cache_dir"]

KEEP = 4  # archives kept (each is about 50 MB): the newest, for the jars and JDKs in use
_SUFFIX = ".jsa"
_STALE_S = 86_400.0
_REFUSED = ".refused"
# What starts a class-file hook: an agent, or Flight Recorder.
_HOOKS = ("-javaagent", "-agentlib", "-agentpath", "StartFlightRecording", "FlightRecorder")
_OPTION_VARIABLES = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")
_CRASHES = (-6, -11, 134, 139)  # SIGABRT and SIGSEGV, as a signal or as the shell reports them
# The JVM's own messages (a refused archive among them) go to stderr, the job's log, never among the JSON
# lines on stdout.
LOG_FLAGS = ["-Xlog:disable", "-Xlog:all=warning:stderr"]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "simhash-index" / "class-archives"


class ClassArchive:
    """The archive of one JVM and class path: ``flags()`` before the JVM starts, ``keep()`` after it ends."""

    def __init__(self, java: str, jars: list[Path], folder: Path | None = None) -> None:
        if not jars:
            raise ValueError("jars must name at least one jar")
        self.folder = folder if folder is not None else cache_dir()
        digest = hashlib.sha256()
        for path in [Path(java).resolve(), *(jar.resolve() for jar in jars)]:
            stat = path.stat()
            digest.update(f"{path}\t{stat.st_size}\t{stat.st_mtime_ns}\n".encode())
        self.key = digest.hexdigest()[:32]
        self.path = self.folder / f"{self.key}{_SUFFIX}"
        self._written = self.folder / f"{self.key}.{uuid.uuid4().hex[:12]}.part"
        self._used = False

    def flags(self, environ: dict[str, str] | None = None) -> list[str]:
        """Use the archive if there is one; otherwise write it as the JVM exits. Without a writable cache
        directory, with a class-file hook in the JVM's option variables (``environ``: os.environ), or once an
        archive of this key has crashed its JVM, the JVM runs without one."""
        env = os.environ if environ is None else environ
        if any(hook in env.get(name, "") for name in _OPTION_VARIABLES for hook in _HOOKS):
            return LOG_FLAGS
        if self.path.with_suffix(_REFUSED).exists():
            return LOG_FLAGS
        if self.path.is_file():
            self._used = True
            return [*LOG_FLAGS, f"-XX:SharedArchiveFile={self.path}"]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return LOG_FLAGS
        if not os.access(self.folder, os.W_OK):
            return LOG_FLAGS
        return [*LOG_FLAGS, f"-XX:ArchiveClassesAtExit={self._written}"]

    def keep(self, exit_code: int) -> bool:
        """After the JVM has exited with ``exit_code``: the archive it wrote becomes the key's, and all but
        the newest ``KEEP`` go; the archive it used is set aside if it crashed. Returns whether one was kept."""
        if self._used and exit_code in _CRASHES:
            with contextlib.suppress(OSError):
                os.replace(self.path, self.path.with_suffix(_REFUSED))
            return False
        if not self._written.is_file():
            return False
        try:
            if self._written.stat().st_size == 0:
                self._written.unlink()
                return False
            os.replace(self._written, self.path)
            archives = sorted(self.folder.glob(f"*{_SUFFIX}"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
            for old in archives[KEEP:]:
                old.unlink(missing_ok=True)
            for part in self.folder.glob("*.part"):  # a JVM killed while it wrote leaves its part behind
                if time.time() - part.stat().st_mtime > _STALE_S:
                    part.unlink(missing_ok=True)
        except OSError:
            return False
        return True
