"""Numbers as the terminal and the report print them."""

from __future__ import annotations


def signed(value: float | None, places: int = 3) -> str:
    """A difference with its sign to ``places`` decimals; ``-`` where there is none. Zero
    (``-0.0`` too) is shown unsigned, and a difference that rounds to zero keeps two
    significant digits: never a "-0.000" that reads as a difference.

    >>> signed(0.1594), signed(-0.4462), signed(-0.0), signed(0.0)
    ('+0.159', '-0.446', '0.000', '0.000')
    >>> signed(-0.00021), signed(4e-7), signed(None)
    ('-0.00021', '+4e-07', '-')
    """
    if value is None:
        return "-"
    if value == 0:
        return f"{0.0:.{places}f}"
    if round(value, places) == 0:
        return f"{value:+.2g}"
    return f"{value:+.{places}f}"
