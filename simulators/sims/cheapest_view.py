"""The cheapest-deployment search's charts and words: the price of each configuration (cost) and
its latency against the targets (latency), also while the engine confirms layouts."""

from collections import Counter
from typing import Any

from ..plotting import bar, chart, markers

# Why a layout was left out (cheapest.py's reasons, by their opening words), as the summary counts them.
# A floor is a bound, not a time (sizing_search.bounds).
REASONS = {
    "misses the targets": "missing the targets on the engine",
    "the rate needs at least": "needing more GPUs than the limit for this rate (on paper)",
    "its TTFT floor": "missing a target on their floors alone (on paper)",
    "its ITL floor": "missing a target on their floors alone (on paper)",
    "does not fit": "not fitting (vLLM would refuse to start)",
    "TP ": "splitting the attention heads unevenly",
}
NO_PRICE = "skipped: no price (gpu_prices.toml, or Your prices)"


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    """While the engine confirms layouts (what run() yields, with "pending") the rows found so far
    and, in the cost view, the lower bounds of the layouts next in line; then the ranked table."""
    q, searching, rows = r["percentile"], "pending" in r, r["table"]
    title = f"{r['model']} at {r['request_rate_per_s']:g} req/s: " + (
        f"searching ({r['layouts_left']} layouts still in line)"
        if searching
        else f"configurations meeting the p{q} SLO"
    )
    if view == "latency":
        run = [x for x in rows if "ttft_s" in x]  # every row, once the search is done
        data = [
            markers([x["tpot_s"] * 1e3 for x in run], [x["ttft_s"] * 1e3 for x in run],
                    "Confirmed so far" if searching else "Ranked configurations", 0,
                    text=[str(i + 1) for i in range(len(run))]),
            markers([r["tpot_slo_s"] * 1e3], [r["ttft_slo_s"] * 1e3], "Targets (the corner of the allowed box)", 1),
        ]  # fmt: skip
        title = title if searching else f"p{q} latency of each ranked configuration"
        # Both axes from 0 past the targets: the allowed box whole, its corner marker unclipped on a phone.
        box = {ax: {"range": [0, 1.1 * max(v for t in data for v in t[ax[0]])]} for ax in ("xaxis", "yaxis")}
        return chart(data, title, f"p{q} ITL (ms)", f"p{q} TTFT (ms)", **box)
    # Horizontal bars with short labels (rank, GPUs, GPU id, layout) that a phone's width holds; the
    # whole configuration is in the hover text and the table. Listed bottom-up: the cheapest on top.
    found = [f"{i + 1}. {x['short']}" for i, x in enumerate(rows)][::-1]
    data = [_bars(rows[::-1], found, "Meets the targets (engine)" if searching else "USD per hour", 0, "")]
    if searching:
        pending = r["pending"][::-1]
        bounds = [f"{x['short']} (bound)" for x in pending]
        data.append(_bars(pending, bounds, "Lower bound, not yet run", 1, "at least "))
    return chart(data, title, "USD per hour", "", yaxis={"type": "category"})


def _bars(rows: list[dict[str, Any]], labels: list[str], name: str, i: int, bound: str) -> dict[str, Any]:
    hover = f"%{{customdata}}: {bound}USD %{{x:,.2f}} per hour<extra></extra>"
    cost, names = [x["usd_per_hour"] for x in rows], [x["config"] for x in rows]
    return bar(cost, labels, name, i, orientation="h", customdata=names, hovertemplate=hover)


def summary(r: dict[str, Any], view: str) -> str:
    q = r["percentile"]
    head = (
        f"{r['model']} at {r['request_rate_per_s']:g} requests/s, p{q} TTFT within {r['ttft_slo_s'] * 1e3:,.0f} ms "
        f"and p{q} ITL within {r['tpot_slo_s'] * 1e3:,.1f} ms. "
    )
    if not r["found"]:
        why = "; ".join(f"{x['config']}: {x['why']}" for x in r["pruned"][:6])
        none = "No configuration meets these targets" + (", so the chart has no points" if view == "latency" else "")
        floors = " floor, " in why  # a bound, which a reader takes for a time (learner review: "PP4: 15 ms")
        why += " (a floor bounds every request from below, at any load)" * floors
        return head + f"{none}. Why each was left out: {why}." + _skipped(r["pruned"])
    if view == "latency":
        rows = r["table"]
        tight = min(range(len(rows)), key=lambda i: rows[i]["headroom"])
        points = [
            f"{i + 1}. {x['config']}: p{q} ITL {x['tpot_s'] * 1e3:,.1f} ms, p{q} TTFT {x['ttft_s'] * 1e3:,.0f} ms, "
            f"headroom {x['headroom']:.0%} (USD {x['usd_per_hour']:,.2f}/h, USD "
            f"{x['usd_per_million_output_tokens']:,.3f} per million output tokens)"
            for i, x in enumerate(rows)
        ]
        return (
            f"{head}Each ranked layout's latency, against the targets that mark the corner of the allowed box: "
            f"{'; '.join(points)}. Layout {tight + 1} is closest to a target, with {rows[tight]['headroom']:.0%} of "
            f"the tighter target left.{_skipped(r['pruned'])}"
        )
    lines = [
        f"{i + 1}. {x['config']}: USD {x['usd_per_hour']:,.2f}/h, USD {x['usd_per_million_output_tokens']:,.3f} per "
        f"million output tokens, p{q} TTFT {x['ttft_s'] * 1e3:,.0f} ms, p{q} ITL {x['tpot_s'] * 1e3:,.1f} ms, "
        f"headroom {x['headroom']:.0%}"
        for i, x in enumerate(r["table"])
    ]
    return (
        f"{head}The cheapest layouts, each at its fewest replicas, by price (a layout whose lower bound is above "
        f"the last row was not run): {'; '.join(lines)}.{_first(r['table'])}{_searched(r)}{_left_out(r['pruned'])}"
        f"{_skipped(r['pruned'])}"
    )


def _first(rows: list[dict[str, Any]]) -> str:
    """Why row 1 leads (learner review: a 4 x L40S pipeline first, unexplained): the price alone."""
    top, n = rows[0], rows[0]["num_gpus"]
    each = (
        f"{n} GPUs at USD {top['usd_per_hour'] / n:,.2f}/h each"
        if n > 1
        else f"1 GPU at USD {top['usd_per_hour']:,.2f}/h"
    )
    if len(rows) == 1:
        return f" It is the only layout found that meets both targets: {each}."
    text = f" Every row meets both targets, so price alone ranks them: row 1 is {each}"
    roomier = max(rows[1:], key=lambda x: x["headroom"])
    if roomier["headroom"] > top["headroom"]:
        extra = roomier["usd_per_hour"] - top["usd_per_hour"]
        text += (
            f"; row {rows.index(roomier) + 1} leaves more headroom ({roomier['headroom']:.0%} against "
            f"{top['headroom']:.0%}) " + (f"for USD {extra:,.2f}/h more" if extra > 0.005 else "at the same price")
        )
    return text + "."


def _searched(r: dict[str, Any]) -> str:
    """Every layout the key figures count, accounted for (learner review: "140 started, 39 confirmed"
    beside three rows)."""
    m, s, n = r["metrics"], r["search"], len(r["table"])
    if m["layouts_tried"] == 1:
        return " vLLM would start no other layout here."
    ran, paper, missed = int(m["layouts_confirmed"]), s["ruled_out_on_paper"], s["missed_on_engine"]
    dearer, unrun = ran - n - missed, int(m["layouts_tried"]) - paper - ran
    parts = [f"{n} {'is the row' if n == 1 else 'are the rows'} above"]
    parts += [f"{missed} miss the targets on every GPU count allowed"] if missed else []
    parts += [f"{dearer} could not meet them for less than row {n}"] if dearer else []
    listed = " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)
    text = f" Of the {int(m['layouts_tried'])} layouts vLLM would start, "
    text += (
        f"{paper} miss a target on paper (their closed-form floors); the engine ran {ran} of the rest"
        if paper
        else f"the engine ran {ran}"
    )
    text += f", cheapest lower bound first: {listed}"
    return text + (
        f"; the other {unrun} were never run, as even their lower bound does not undercut row {n}." if unrun else "."
    )


def _left_out(pruned: list[dict[str, Any]]) -> str:
    """ " 32 layouts were left out: 22 missing the targets, 10 needing more GPUs than the limit for this rate"."""
    whys = [x["why"] for x in pruned if not x["why"].startswith("skipped: ")]  # named apart, in _skipped
    counts = Counter(next((v for k, v in REASONS.items() if why.startswith(k)), "for other reasons") for why in whys)
    n = len(whys)
    parts = ", ".join(f"{c} {kind}" for kind, c in counts.most_common())
    return f" {n} layout{'s were' if n != 1 else ' was'} left out: {parts}." if n else ""


def _skipped(pruned: list[dict[str, Any]]) -> str:
    """The GPUs left out for a missing figure or price, named (never ranked on a memory-only floor)."""
    unpriced = [x["config"] for x in pruned if x["why"] == NO_PRICE]
    whys = dict.fromkeys(x["why"] for x in pruned if x["why"].startswith("skipped: ") and x["why"] != NO_PRICE)
    text = "".join(f" Skipped: {why.removeprefix('skipped: ')}." for why in whys)
    return text + (f" Not searched, no price: {', '.join(unpriced)} (add one in Your prices)." if unpriced else "")
