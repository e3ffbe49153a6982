"""The text of a PDF, read in a child process: ``python -I pdf_child.py FILE PAGES CHARS``.

A PDF is a program of sorts: streams that inflate to gigabytes, page trees that loop,
content that keeps a parser busy for minutes. Read here, in a process of its own with an
address-space and CPU-time limit, it can only exhaust itself; the daemon waits for it at
most ``attachments.pdf_timeout_s`` and kills it. This module imports nothing of hatchway
(it runs without the daemon's environment, so no secret reaches it) and prints one JSON
object: ``{"pages": n, "read": k, "text": "...", "truncated": bool}`` or
``{"error": "<one sentence>"}``.
"""

from __future__ import annotations

import json
import logging
import resource
import sys

#: The child's address-space limit: far above what pypdf needs for an honest PDF.
MEMORY_BYTES = 1024 * 1024 * 1024


def _limit(cpu_s: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


def extract(path: str, max_pages: int, max_chars: int) -> dict[str, object]:
    """The text of the first ``max_pages`` pages of ``path``, at most ``max_chars``
    characters of it, each page under a ``[page N]`` line."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, LimitReachedError

    try:
        reader = PdfReader(path, strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            return {"error": "the PDF is protected by a password"}
        total = len(reader.pages)
        parts: list[str] = []
        chars = 0
        read = 0
        for number in range(min(total, max_pages)):
            page = reader.pages[number].extract_text() or ""
            read += 1
            parts.append(f"[page {number + 1}]\n{page.strip()}")
            chars += len(parts[-1]) + 2
            if chars >= max_chars:
                break
    except (FileNotDecryptedError, NotImplementedError):
        return {"error": "the PDF is encrypted in a way that cannot be read"}
    except LimitReachedError:
        return {"error": "the PDF holds more data than can be read safely"}
    except MemoryError:
        return {"error": "the PDF needs more memory to read than is allowed"}
    except RecursionError:
        return {"error": "the PDF's structure is nested too deeply to read"}
    except Exception:
        # hostile input: whatever pypdf raises on it is a damaged file to the user
        return {"error": "the PDF is corrupt or cannot be read"}
    text = "\n\n".join(parts)
    truncated = len(text) > max_chars or read < total
    return {"pages": total, "read": read, "text": text[:max_chars], "truncated": truncated}


def main(argv: list[str]) -> int:
    path, max_pages, max_chars, cpu_s = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    logging.disable(logging.CRITICAL)  # pypdf's warnings about damaged files: not output
    _limit(cpu_s)
    result = extract(path, max_pages, max_chars)
    sys.stdout.write(json.dumps(result, ensure_ascii=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
