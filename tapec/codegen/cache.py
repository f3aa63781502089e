"""The in-memory compile cache: an LRU keyed by graph structure, safe across threads.

Concurrent misses of the same key compile once: the first thread builds while the
others wait on that key's lock, then find the entry. When a persistent cache directory is
configured (TAPEC_CACHE_DIR, see `disk_cache`), a miss first looks there: a valid file
skips differentiation, simplification and emission. `misses` still counts every miss in
memory, so counts mean the same with or without a disk cache; `disk_hits` counts the
misses served from disk.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict, namedtuple

from . import disk_cache

# disk_hits comes last so that code indexing the first four fields keeps working.
CacheInfo = namedtuple("CacheInfo", "hits misses size maxsize disk_hits")
log = logging.getLogger("tapec.cache")


class CompileCache:
    def __init__(self, maxsize: int = 512):
        self._entries = OrderedDict()
        self._aliases = OrderedDict()
        self._programs = OrderedDict()      # key -> an uncompiled program (find_program)
        self._lock = threading.Lock()
        self._building = {}
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self.disk_hits = 0

    def get_or_build(self, key, build):
        """The entry for `key`: from memory, else from the disk cache if one is configured,
        else `build()`'s (then written to disk)."""
        with self._lock:
            entry = self._hit(self._entries, key)
            if entry is not None:
                return entry
            key_lock = self._building.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                entry = self._hit(self._entries, key)
                if entry is not None:          # another thread built it while we waited
                    return entry
            try:
                # Under the key's lock, so threads of one process read or write a key's
                # file once; other processes are kept safe by disk_cache's atomic writes.
                entry, loaded = disk_cache.fetch(key, build)
            except BaseException:
                with self._lock:
                    self._building.pop(key, None)
                raise
            with self._lock:
                # Stored in the same critical section that drops the key's lock, so a
                # thread arriving in between finds the entry instead of building again.
                self._building.pop(key, None)
                self.misses += 1
                self.disk_hits += loaded
                self._store(self._entries, key, entry)
            log.debug("compile cache miss%s: %s", " (loaded from disk)" if loaded else "",
                      getattr(entry, "title", ""))
            return entry

    def replace(self, key, entry):
        """Store `entry` under `key` in place of what is there (a provisional entry's
        final version), on disk too; not counted as a miss."""
        with self._lock:
            self._store(self._entries, key, entry)
        disk_cache.save(key, entry)

    def find_alias(self, key):
        """The entry stored under an alias key (see `put_alias`), or None. A found alias
        counts as a hit; absence counts nothing (the caller then goes through
        `get_or_build`, which counts)."""
        with self._lock:            # _hit, inlined: an eager step's one lookup
            entry = self._aliases.get(key)
            if entry is not None:
                self._aliases.move_to_end(key)
                self.hits += 1
            return entry

    def _hit(self, table, key):
        """`table[key]` made most recent and counted as a hit, or None (lock held)."""
        entry = table.get(key)
        if entry is not None:
            table.move_to_end(key)
            self.hits += 1
        return entry

    def put_alias(self, key, entry):
        """Remember a second, cheaper-to-compute key for an entry. Aliases are bounded by
        the same size and do not count as entries."""
        with self._lock:
            self._store(self._aliases, key, entry)

    def _store(self, table, key, value):
        """`table[key] = value`, most recent, the least recent dropped beyond `maxsize`
        (lock held)."""
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.maxsize:
            table.popitem(last=False)

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self.hits, self.misses, len(self._entries), self.maxsize,
                             self.disk_hits)

    def find_program(self, key):
        """A program kept by `put_program` (an uncompiled derivative, which an enclosing
        tape records op by op), or None; neither counted as a hit nor as a miss."""
        with self._lock:
            program = self._programs.get(key)
            if program is not None:
                self._programs.move_to_end(key)
            return program

    def put_program(self, key, program):
        with self._lock:
            self._store(self._programs, key, program)
        return program

    def clear(self):
        with self._lock:
            self._entries.clear()
            self._aliases.clear()
            self._programs.clear()
            self.hits = self.misses = self.disk_hits = 0

    def resize(self, maxsize: int):
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 1:
            raise ValueError(f"set_cache_size: maxsize must be a positive int, got {maxsize!r}")
        with self._lock:
            self.maxsize = maxsize
            for table in (self._entries, self._aliases, self._programs):
                while len(table) > maxsize:
                    table.popitem(last=False)


CACHE = CompileCache()
