"""Number formatting shared by the tables of scripts/bench/report.py: the
same rounding for every cell, so a table's columns read alike. Formatting
only; nothing here reads or judges results."""


def sig(x, digits=3):
    """x with `digits` significant figures, thousands separated."""
    if x == 0:
        return "0"
    rounded = float(f"{x:.{digits}g}")
    return f"{rounded:,.0f}" if abs(rounded) >= 10 ** (digits - 1) else f"{rounded:g}"


def ms(x):
    """A time given in milliseconds, as ms or µs."""
    return f"{sig(x, 2)} ms" if abs(x) >= 1 else f"{sig(x * 1000, 2)} µs"


def us(x):
    """A time given in microseconds, to the microsecond."""
    return f"{x:.0f} µs"


def size(nbytes):
    return f"{sig(nbytes / 1e6, 2)} MB" if nbytes >= 1e6 else f"{sig(nbytes / 1e3, 2)} kB"


def ratio(x):
    return f"{x:.2f}x"


def value(x, unit):
    """A check's value: a ratio ("x") or microseconds ("µs")."""
    return ratio(x) if unit == "x" else us(x)


def span(values, unit="x"):
    """The range of per-round values, "0.71-0.79" (ratios) or "52-61 µs"."""
    if not values:
        return "-"
    if unit == "x":
        return f"{min(values):.2f}-{max(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}"
    if len(values) == 1:
        return us(values[0])
    return f"{min(values):.0f} to {max(values):.0f} µs"
