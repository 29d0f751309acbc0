"""Print the fitted engine-profile constants (edits nothing): the fit on every calibration row.

    python scripts/fit_engine_profiles.py                  # the full fit (the TOML holds it, rounded)
    python scripts/fit_engine_profiles.py --without GROUP  # the fit without one source group's rows

The fitting itself is simulators/benchmark/fitting.py (the validation page's cross-validation
refits with it). Held-out rows are never read: it refuses a row whose role is not "calibration".
Copy the printed values into simulators/data/engine_profiles.toml.
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simulators.benchmark import fitting, validation  # noqa: E402


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument(
        "--without", help="leave out this source group (one of: " + "; ".join(fitting.calibration_groups()) + ")"
    )
    args = ap.parse_args(argv)
    if args.without and args.without not in fitting.calibration_groups():
        ap.error(f"--without: no calibration group {args.without!r}")
    fitted = fitting.fit(without=args.without)
    entries = {e["id"]: e for e in validation.measurements()}
    for f in fitting.FITS:
        value = getattr(fitted[f.profile], f.factor)
        rows = [r for r in f.rows if validation.source_group(entries[r]) != args.without]
        if not rows:
            print(f"{f.profile:9s} {f.factor:12s} = {value:.3f}   (no row left: the other engines' median)")
        for one in rows:
            pred, published = fitting.speeds(fitted[f.profile], entries[one])
            print(f"{f.profile:9s} {f.factor:12s} = {value:.3f}   ({one}: {pred:,.1f} vs {published:,.1f}, as speeds)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
