"""Peak memory of a call, as the memory tests compare it at two sizes."""

import tracemalloc


def peak_bytes(call) -> int:
    """The most bytes Python had allocated at once (tracemalloc) while ``call()`` ran."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
