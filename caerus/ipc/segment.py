"""Shared-memory segments: the file, its header, creation over stale segments, and (retry-)attach.

A segment is a file ``caerus-<name>`` in ``$CAERUS_SHM_DIR`` (default ``/dev/shm``) mapped by every process that
uses it. The first 256 bytes are the header::

    line 0 (offset 0)    magic u64, layout version u32, record size u32, capacity u32, kind u32, generation u64,
                         writer pid u64, heartbeat ns u64, created ns u64, slot stride u32, lanes u32
    line 1 (offset 64)   reserved for the ring's hot words (write cursor / head), one per cache line
    line 2 (offset 128)  reserved (SPSC tail)
    line 3 (offset 192)  counters the ring kinds keep; layout name (16 bytes) at offset 224

A writer creates the file under a temporary name and renames it into place, so a reader either sees no file or a
complete header, and readers still attached to the previous generation keep a consistent (dead) mapping until
they notice the new inode and re-attach (``Mapping.stale_mapping``).

Trust: ``/dev/shm`` is shared by every local user and segment names are predictable. Every open of a segment file
goes through :func:`open_file`: ``O_NOFOLLOW | O_NONBLOCK`` (a planted symlink is refused, a planted FIFO cannot
hang the open) and an ``fstat`` of what was opened (a regular file owned by this user; for mapping, also not
writable by group or others), SegmentUntrusted otherwise. Create makes its temporary file with ``O_EXCL`` (mode
0600), so a file another user planted there is never reused, and removes it on any failure. ``$CAERUS_SHM_DIR``
is created 0700 and checked before use (:func:`ensure_shm_dir`): a real directory owned by this user and not
writable by group or others, or a root-owned sticky one like ``/dev/shm`` itself (where only a file's owner may
rename or remove it).
"""

from __future__ import annotations

import logging
import mmap
import os
import stat
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from caerus.wire import LAYOUT_VERSION, Layout

log = logging.getLogger(__name__)

MAGIC = 0x31474553_53555245  # b"ERUSSEG1" little-endian: "caerus segment v1"
HEADER_SIZE = 256
CACHE_LINE = 64
_HEADER = struct.Struct("<QIIIIQQQQII")  # fields of line 0 (exactly 64 bytes)
_NAME = struct.Struct("16s")  # layout name, in line 3 after the ring kinds' counters
OFF_NAME = 224
# byte offsets of header words that change after creation (8-byte aligned, for memoryview('q') access)
OFF_HEARTBEAT = 40
OFF_CURSOR = 64
OFF_TAIL = 128
OFF_COUNTERS = 192

KIND_SWMR = 1
KIND_SPSC = 2
KIND_MPSC = 3
KIND_COUNTERS = 4
KIND_NAMES = {KIND_SWMR: "swmr", KIND_SPSC: "spsc", KIND_MPSC: "mpsc", KIND_COUNTERS: "counters"}

DEFAULT_STALE_AFTER_S = 2.0
# Map every page of a segment at mmap time (Linux). Without it each process faults a ring's pages in one by one
# as the ring is first written or read -- page faults on the hot path during the first lap, and RSS that creeps
# up for as long as the slowest ring takes to wrap (a 4096-slot Hyperliquid book ring: ~330 KB over ~6 minutes),
# which looks like a leak. Populated up front, a process's RSS is flat from attach.
_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)


class SegmentError(RuntimeError):
    """Base class of segment errors."""


class SegmentMismatch(SegmentError):
    """The segment on disk was written with a different layout than the one this process expects."""


class SegmentBusy(SegmentError):
    """A live writer already owns the segment."""


class SegmentUntrusted(SegmentError):
    """The segment file is not owned by this user, is writable by group/others, or is not a regular file."""


class AttachTimeout(SegmentError):
    """No (valid) segment appeared within the attach timeout."""


class ShmDirUntrusted(SegmentError):
    """``$CAERUS_SHM_DIR`` is not a private directory of this user (nor a root-owned sticky one like /dev/shm)."""


def shm_dir() -> Path:
    return Path(os.environ.get("CAERUS_SHM_DIR", "/dev/shm"))


def ensure_shm_dir() -> Path:
    """The segment folder, created 0700 when missing, refused (ShmDirUntrusted, one line naming the folder and the
    problem) when another user could place or swap files in it."""
    path = shm_dir()
    try:
        path.mkdir(mode=0o700, parents=True)
        os.chmod(path, 0o700)  # exactly 0700 whatever the umask
    except FileExistsError:
        pass
    except OSError as exc:
        raise ShmDirUntrusted(f"segment folder {path} (CAERUS_SHM_DIR) cannot be created: "
                              f"{exc.strerror or exc}") from None
    check_shm_dir(path, os.lstat(path))
    return path


def check_shm_dir(path: Path, st: os.stat_result) -> None:
    """Refuse a segment folder that is a symlink, not a directory, another user's, or group/other-writable (a
    root-owned sticky folder such as /dev/shm is accepted: its files can only be renamed or removed by their owner,
    and every segment file is checked on open)."""
    uid = os.geteuid()
    mode = stat.S_IMODE(st.st_mode)
    problem = ""
    if stat.S_ISLNK(st.st_mode):
        problem = "is a symlink"
    elif not stat.S_ISDIR(st.st_mode):
        problem = "is not a directory"
    elif st.st_uid == 0 and st.st_mode & stat.S_ISVTX:
        return  # the system's shared folder (/dev/shm, /tmp): sticky, per-file checks apply
    elif st.st_uid != uid:
        problem = f"is owned by uid {st.st_uid}, not by this user (uid {uid})"
    elif st.st_mode & 0o022:
        problem = f"is writable by group or others (mode {mode:04o}; needs 0700)"
    if problem:
        raise ShmDirUntrusted(f"segment folder {path} (CAERUS_SHM_DIR) {problem}: refusing to use it; point "
                              f"CAERUS_SHM_DIR at a folder of your own with mode 0700, or remove it to have it made")


def shm_path(name: str) -> Path:
    if not name or "/" in name:
        raise ValueError(f"segment name {name!r} must be non-empty and contain no '/'")
    return shm_dir() / f"caerus-{name}"


@dataclass(frozen=True)
class Header:
    magic: int
    layout_version: int
    record_size: int
    capacity: int
    kind: int
    generation: int
    writer_pid: int
    heartbeat_ns: int
    created_ns: int
    slot_stride: int
    lanes: int
    layout_name: str

    @classmethod
    def read(cls, buf) -> Header:
        name = _NAME.unpack_from(buf, OFF_NAME)[0].rstrip(b"\0").decode("ascii", "replace")
        (magic, layout_version, record_size, capacity, kind, generation, writer_pid, heartbeat_ns, created_ns,
         slot_stride, lanes) = _HEADER.unpack_from(buf, 0)
        return cls(magic, layout_version, record_size, capacity, kind, generation, writer_pid, heartbeat_ns,
                   created_ns, slot_stride, lanes, name)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user counts); a pid <= 0 names none."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_expected(layout: Layout, kind: int) -> str:
    return f"{KIND_NAMES.get(kind, kind)} of {layout.name} records ({layout.size} B, layout v{LAYOUT_VERSION})"


def check_header(name: str, hdr: Header, layout: Layout, kind: int) -> None:
    """Refuse a segment whose magic, layout version, record size or kind differs, naming both sides."""
    if hdr.magic != MAGIC:
        raise SegmentMismatch(f"segment {name!r}: bad magic {hdr.magic:#x} (expected {MAGIC:#x}): not a Caerus segment")
    theirs = (
        f"{KIND_NAMES.get(hdr.kind, hdr.kind)} of {hdr.layout_name} records "
        f"({hdr.record_size} B, layout v{hdr.layout_version})"
    )
    ours = describe_expected(layout, kind)
    if hdr.layout_version != LAYOUT_VERSION or hdr.record_size != layout.size or hdr.kind != kind:
        raise SegmentMismatch(f"segment {name!r} holds {theirs}, but this process expects {ours}")
    if hdr.layout_name != layout.name:
        raise SegmentMismatch(f"segment {name!r} holds {theirs}, but this process expects {ours}")


class Mapping:
    """An open, mapped segment file plus the word view every ring kind uses."""

    def __init__(self, name: str, path: Path, fd: int, size: int) -> None:
        self.name = name
        self.path = path
        self.size = size
        self.inode = os.fstat(fd).st_ino
        self.mm = mmap.mmap(fd, size, _MAP_FLAGS, mmap.PROT_READ | mmap.PROT_WRITE)
        os.close(fd)
        # 8-byte word view. Aligned 8-byte stores through it are single instructions on x86-64, which is what the
        # seqlock relies on (a reader can never see half a sequence word).
        self.words = memoryview(self.mm).cast("q")

    @property
    def header(self) -> Header:
        return Header.read(self.mm)

    def heartbeat_age_s(self) -> float:
        return (time.time_ns() - self.words[OFF_HEARTBEAT // 8]) / 1e9

    def stale_mapping(self) -> bool:
        """True when the path now names another file (the writer restarted) or is gone."""
        try:
            return os.stat(self.path).st_ino != self.inode
        except FileNotFoundError:
            return True

    def close(self) -> None:
        self.words.release()
        self.mm.close()


def create(name: str, layout: Layout, kind: int, capacity: int, slot_stride: int, data_size: int,
           lanes: int = 0, stale_after_s: float = DEFAULT_STALE_AFTER_S,
           init: Callable[[Mapping], None] | None = None) -> Mapping:
    """Create segment ``name`` (header + ``data_size`` bytes), replacing a stale one of a dead writer.

    ``init`` fills the data area (e.g. a counter block's name table) *before* the segment is renamed into place,
    so no reader can attach to a half-initialised segment. Raises SegmentBusy when the existing segment's writer
    is alive and its heartbeat is fresh.
    """
    path = shm_path(name)
    ensure_shm_dir()
    old_generation = 0
    # Whatever is at the name now: never followed (symlink), never blocked on (FIFO), refused unless it is our own
    # regular file (it is about to be replaced, so group/other write bits do not matter here).
    try:
        fd, _st = open_file(name, path, os.O_RDONLY, private=False)
    except FileNotFoundError:
        fd = -1
    if fd >= 0:
        try:
            raw = os.pread(fd, HEADER_SIZE, 0)
        finally:
            os.close(fd)
        if len(raw) == HEADER_SIZE:
            old = Header.read(raw)
            if old.magic == MAGIC:
                old_generation = old.generation
                age_s = (time.time_ns() - old.heartbeat_ns) / 1e9
                if old.writer_pid != os.getpid() and pid_alive(old.writer_pid) and age_s < stale_after_s:
                    raise SegmentBusy(
                        f"segment {name!r} is owned by live writer pid {old.writer_pid} "
                        f"(heartbeat {age_s:.1f} s ago); stop it first"
                    )
    size = HEADER_SIZE + data_size
    size = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        os.unlink(tmp)  # our own leftover (same pid: a previous create interrupted); another user's fails below
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        pass
    # O_EXCL | O_NOFOLLOW: never open a file (or a symlink) someone else put under the temporary name.
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    seg: Mapping | None = None
    try:  # from here on the temporary file is ours: removed on any failure (a rename refused included)
        os.ftruncate(fd, size)
        seg = Mapping(name, tmp, fd, size)
        fd = -1  # the mapping closed it
        now = time.time_ns()
        generation = max(now, old_generation + 1)
        _HEADER.pack_into(
            seg.mm, 0, MAGIC, LAYOUT_VERSION, layout.size, capacity, kind, generation, os.getpid(), now, now,
            slot_stride, lanes,
        )
        _NAME.pack_into(seg.mm, OFF_NAME, layout.name.encode("ascii"))
        if init is not None:
            init(seg)
        os.rename(tmp, path)
    except BaseException:
        if seg is not None:
            seg.close()
        elif fd >= 0:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    seg.path = path
    return seg


def open_file(name: str, path: Path, flags: int, *, private: bool = True) -> tuple[int, os.stat_result]:
    """Open segment file ``path`` safely: the one way every segment file is opened (create, attach, capture).

    ``O_NOFOLLOW | O_NONBLOCK``: a symlink planted at the predictable name is refused and a FIFO cannot block the
    open (a regular file ignores ``O_NONBLOCK``). What was opened is then checked with ``fstat`` (no race with a
    swap of the name): a regular file owned by this user and, when ``private``, not writable by group or others.
    Returns the descriptor and its stat; raises FileNotFoundError when nothing is there, SegmentUntrusted (naming
    the file and the problem) otherwise.
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:  # ELOOP: a symlink; EACCES: another user's file; ENXIO: a socket
        raise SegmentUntrusted(f"segment {name!r} at {path} cannot be opened safely: "
                               f"{exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        check_trusted(name, path, st, private=private)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def check_trusted(name: str, path: Path, st: os.stat_result, *, private: bool = True) -> None:
    """Refuse a segment file another user could have written: not a regular file, not ours, or (``private``)
    group/other-writable. The message names the file, its owner and mode."""
    uid = os.geteuid()
    problem = ""
    if not stat.S_ISREG(st.st_mode):
        problem = f"is not a regular file ({_file_type(st.st_mode)})"
    elif st.st_uid != uid:
        problem = f"is owned by uid {st.st_uid}, not by this user (uid {uid})"
    elif private and st.st_mode & 0o022:
        problem = f"is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    if problem:
        raise SegmentUntrusted(f"segment {name!r} at {path} {problem}: refusing to map it (another local user may "
                               f"have planted it); remove it and restart its writer")


def _file_type(mode: int) -> str:
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return what
    return f"mode {mode:o}"


def attach(name: str, layout: Layout, kind: int, timeout: float | None = None) -> Mapping:
    """Map segment ``name``, waiting for it to appear (bounded backoff, logged once) when it does not exist yet.

    ``timeout=None`` waits forever (processes may start in any order); on timeout raises AttachTimeout.
    A segment that exists but does not match raises SegmentMismatch at once, one this user does not own or that
    group/others may write SegmentUntrusted: waiting would not fix either.
    """
    path = shm_path(name)
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.001
    logged = False
    dir_checked = False
    while True:
        if not dir_checked:  # once it exists (the writer may not have made it yet)
            try:
                check_shm_dir(path.parent, os.lstat(path.parent))
                dir_checked = True
            except FileNotFoundError:
                pass
        try:
            fd, st = open_file(name, path, os.O_RDWR)
        except FileNotFoundError:
            fd = -1
        if fd >= 0:
            size = st.st_size
            if size >= HEADER_SIZE:
                seg = Mapping(name, path, fd, size)
                try:
                    check_header(name, seg.header, layout, kind)
                except SegmentMismatch:
                    seg.close()
                    raise
                if logged:
                    log.info("attached to segment %s (writer pid %d)", name, seg.header.writer_pid)
                return seg
            os.close(fd)
        if deadline is not None and time.monotonic() >= deadline:
            raise AttachTimeout(f"segment {name!r} did not appear at {path} within {timeout:g} s")
        if not logged:
            log.info("waiting for segment %s at %s (its writer has not started yet)", name, path)
            logged = True
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def unlink(name: str) -> None:
    try:
        os.unlink(shm_path(name))
    except FileNotFoundError:
        pass


def slot_stride_for(record_size: int) -> int:
    """Slot size: 8-byte sequence word + record, rounded up to whole cache lines (no false sharing)."""
    return (8 + record_size + CACHE_LINE - 1) // CACHE_LINE * CACHE_LINE


def check_capacity(capacity: int) -> None:
    if capacity < 2 or capacity & (capacity - 1):
        raise ValueError(f"ring capacity must be a power of two >= 2, got {capacity}")
