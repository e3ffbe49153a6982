"""PDF files built byte by byte for the attachment tests: pages of text, a corrupt file, a
decompression bomb. pypdf's own writer cannot put text on a page, so the file is written
here: objects, a cross-reference table with their offsets, a trailer."""

from __future__ import annotations

import zlib


def _literal(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return b"(" + escaped.encode("latin-1") + b")"


def _stream(data: bytes, *, extra: bytes = b"") -> bytes:
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def build(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (object 1 is the catalog), with a correct xref table."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def text_pdf(pages: list[str]) -> bytes:
    """A PDF with one line of ``pages[i]`` on page i + 1 (Helvetica, latin-1 text)."""
    first_page = 4
    kids = b" ".join(b"%d 0 R" % (first_page + 2 * i) for i in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, len(pages)),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(pages):
        content = first_page + 2 * i + 1
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % content
        )
        objects.append(_stream(b"BT /F1 12 Tf 72 720 Td " + _literal(text) + b" Tj ET"))
    return build(objects)


def bomb_pdf(inflated_mb: int = 100) -> bytes:
    """A one-page PDF whose content stream is a few hundred kilobytes of deflate that
    inflate to ``inflated_mb`` megabytes of spaces."""
    deflate = zlib.compressobj(9)
    block = b" " * (1024 * 1024)
    data = b"".join(deflate.compress(block) for _ in range(inflated_mb)) + deflate.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
        b" /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R >>",
        _stream(data, extra=b" /Filter /FlateDecode"),
    ]
    return build(objects)


def corrupt_pdf() -> bytes:
    """A PDF header and then nothing a reader can use."""
    return b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R\n" + b"\x00garbage" * 20
