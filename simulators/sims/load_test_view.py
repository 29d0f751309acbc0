"""The load test's charts and words: open against closed loop (knee), goodput by offered rate,
TTFT p99 for both length distributions (lengths), and mean against percentiles at one rate."""

from typing import Any

from ..benchmark import loadgen
from ..plotting import LOG, bar, chart, markers, sweep

FRACTIONS = (0.2, 0.4, 0.6, 0.8, 0.9, 1.0, 1.2, 1.5)  # the open-loop sweep, shares of the server's maximum
USERS = (1, 4, 16, 64, 128)  # the closed-loop sweep's concurrent users
DRAIN_DOMINATES = 0.25  # share of the window after the server stops being full


def figure(r: dict[str, Any], view: str) -> dict[str, Any]:
    if view == "percentiles":
        labels = ["mean", "p50", "p90", "p99"]
        data = [
            bar(labels, [x * 1e3 for x in r["percentiles"][k]], name, i)
            for i, (k, name) in enumerate((("ttft_s", "TTFT"), ("tpot_s", "TPOT")))
        ]
        title = f"Mean vs percentiles at {r['rate_per_s']:g} req/s"
        return chart(data, title, "Statistic", "Milliseconds", barmode="group", yaxis=LOG)
    o = r["open"]
    if view == "goodput":
        data = [
            sweep(o, "offered", "throughput", "Throughput", 0),
            sweep(o, "offered", "goodput", "Goodput (requests meeting the SLO)", 1),
        ]
        if "chosen" in r:  # the chosen rate's throughput and goodput (the key figures)
            c = r["chosen"]
            # What the point's figures rest on, where it is too little (as _trust_sentence says it).
            few = f"; under {loadgen.FEW_SAMPLES} requests" if c["samples"] < loadgen.FEW_SAMPLES else ""
            drain = f"; {c['drain_share']:.0%} of the run is the drain" if c["drain_share"] > DRAIN_DOMINATES else ""
            text = [f"{k}, of {int(c['samples']):,} requests{few}{drain}" for k in ("throughput", "goodput")]
            name, xs = f"At the chosen rate ({c['offered']:g} req/s)", [c["offered"]] * 2
            data.append(markers(xs, [c["throughput"], c["goodput"]], name, 6, mode="markers", text=text))
        title = "Goodput vs offered load (open loop, Poisson)"
        return chart(data, title, "Offered rate (req/s)", "Requests per second")
    if view == "lengths":
        names = {"azure": "Heavy-tailed lengths (Azure lognormal)", "fixed": "Fixed lengths (same means)"}
        first, other = names[r["lengths"]], names["fixed" if r["lengths"] == "azure" else "azure"]
        data = [sweep(o, "offered", "ttft_p99", first, 0), sweep(r["other"], "offered", "ttft_p99", other, 1)]
        return chart(data, "TTFT p99 vs offered load", "Offered rate (req/s)", "TTFT p99 (s)", yaxis=LOG)
    c, offered, users = r["closed"], [f"{x['offered']:.1f} req/s offered" for x in o], [f"{u} users" for u in USERS]
    data = [
        sweep(o, "throughput", "ttft_p99", "Open loop (Poisson rate sweep)", 0, text=offered),
        sweep(c, "throughput", "ttft_p99", "Closed loop (1-128 users)", 1, text=users[: len(c)]),
    ]
    title = "Open loop shows the knee; closed loop hides it"
    return chart(data, title, "Achieved throughput (req/s)", "TTFT p99 (s)", yaxis=LOG)


def summary(r: dict[str, Any], view: str) -> str:
    """One text per view (load_test.VIEWS), each with what its figures rest on."""
    m, o = r["metrics"], r.get("open", [])
    if view == "percentiles":
        ttft, tpot = (" / ".join(f"{x * 1e3:,.1f}" for x in r["percentiles"][k]) for k in ("ttft_s", "tpot_s"))
        text = (
            f"At {r['rate_per_s']:g} req/s (Poisson), TTFT is {m['ttft_s_mean'] * 1e3:,.0f} ms on average but "
            f"{m['ttft_s_p99'] * 1e3:,.0f} ms at p99 (of {int(m['ttft_samples']):,} requests); TPOT "
            f"{m['tpot_s_mean'] * 1e3:,.1f} ms mean, {m['tpot_s_p99'] * 1e3:,.1f} ms p99. Mean / p50 / p90 / p99: "
            f"TTFT {ttft} ms, TPOT {tpot} ms; the p99 TTFT is {m['ttft_s_p99'] / m['ttft_s_mean']:.1f}x the mean."
        )
    elif view == "goodput":
        best = max([*o, r["chosen"]], key=lambda x: x["goodput"])  # the chosen rate is one more point
        text = (
            f"{_maximum(m)} Open loop (Poisson), from {o[0]['offered']:.1f} to {o[-1]['offered']:.1f} req/s offered "
            f"({FRACTIONS[0]:.0%} to {FRACTIONS[-1]:.0%} of that maximum): throughput goes from "
            f"{o[0]['throughput']:.2f} to {o[-1]['throughput']:.2f} req/s and goodput from {o[0]['goodput']:.2f} to "
            f"{o[-1]['goodput']:.2f} req/s, at most {best['goodput']:.2f} (at {best['offered']:.1f} req/s offered, of "
            f"the rates run).{_scatter(o)} At the chosen {r['rate_per_s']:g} req/s, {m['slo_attainment']:.0%} of "
            f"requests meet the SLO: goodput {m['goodput_per_s']:.2f} of {m['request_throughput_per_s']:.2f} req/s."
        )
    elif view == "lengths":
        names = {"azure": "heavy-tailed lengths (Azure lognormal)", "fixed": "fixed lengths (at the Azure means)"}
        other = "fixed" if r["lengths"] == "azure" else "azure"
        picks = [0, FRACTIONS.index(1.0), len(FRACTIONS) - 1]
        mine, others = (" / ".join(f"{pts[i]['ttft_p99'] * 1e3:,.0f}" for i in picks) for pts in (o, r["other"]))
        shares = ", ".join(f"{FRACTIONS[i]:.0%}" for i in picks[:-1]) + f" and {FRACTIONS[picks[-1]]:.0%}"
        rates = " / ".join(f"{o[i]['offered']:.1f}" for i in picks)
        text = (
            f"Open-loop TTFT p99 at {shares} of the server's maximum, {m['max_throughput_per_s']:.1f} requests/s "
            f"({rates} req/s offered): {mine} ms with {names[r['lengths']]}, {others} ms with {names[other]}."
        )
    else:
        c = r["closed"]
        text = (
            f"{_maximum(m)} Open loop (Poisson), TTFT p99 goes "
            f"from {o[0]['ttft_p99'] * 1e3:,.0f} ms at {o[0]['throughput']:.2f} req/s achieved to "
            f"{o[-1]['ttft_p99'] * 1e3:,.0f} ms at {o[-1]['throughput']:.2f} req/s ({o[-1]['offered']:.1f} offered): "
            f"the rate does not wait for the server, so past its maximum requests queue. Closed loop, {USERS[0]} to "
            f"{USERS[len(c) - 1]} users reach {c[0]['throughput']:.2f} to {c[-1]['throughput']:.2f} req/s with TTFT "
            f"p99 {c[0]['ttft_p99'] * 1e3:,.0f} to {c[-1]['ttft_p99'] * 1e3:,.0f} ms. "
            f"{r['users']} closed-loop user{'s reach' if r['users'] != 1 else ' reaches'} "
            f"{m['closed_loop_throughput_per_s']:.2f} req/s with TTFT p99 {m['closed_loop_ttft_s_p99'] * 1e3:,.0f} ms. "
            + _closed_loop(r["users"], r["max_num_seqs"], r["warmup"] != "0" and "phases_ignored" not in r)
            + _drained(o)
        )
    trust = _trust_sentence(r) if view in ("percentiles", "goodput") else ""
    n, ctx = int(m["num_dropped"]), r["max_context_tokens"]
    dropped = (
        f"{n} of the {r['num_requests']:,} requests in each run ask for more than the {ctx:,}-token context (prompt plus output): "
        f"the server rejects them and they count as errors, outside the latency statistics; a closed-loop user goes on to its next request."
        if n
        else f"Every request fits the {ctx:,}-token context."
    )
    return " ".join(t for t in (text, trust, dropped) if t)


def _closed_loop(users: int, slots: int, warmup_out: bool) -> str:
    """Why a closed loop's tail TTFT is what it is (learner review: "they slow down instead of
    queueing" beside a p99 of 2.3 s, which the start sets: every user sends at once; unless the
    warm-up leaves the start out, as a later review found the sentence still claiming)."""
    if users == 1:
        return "One user sends a request only when the last is answered, so it never queues."
    if users <= slots:
        start = "left out with the warm-up" if warmup_out else "what sets that p99"
        return (
            f"The start, when all {users} users send at once, is {start}; after that each sends again only "
            "when answered, so the rate follows the server instead of queueing past it."
        )
    return (
        f"Requests do queue here: {users} users hold more requests than the {slots} batch slots, so up to "
        f"{users - slots} wait for one; the rate still cannot run past the server."
    )


def _scatter(points: list[dict[str, float]]) -> str:
    """Why a run can finish more requests per second than were offered (learner review)."""
    over = [x for x in points if x["throughput"] > 1.02 * x["offered"]]
    if not over:
        return ""
    return (
        f" A short Poisson run's arrivals scatter around the offered rate, so {over[0]['throughput']:.2f} req/s "
        f"can finish at {over[0]['offered']:.2f} offered."
    )


def _drained(points: list[dict[str, float]]) -> str:
    """Which open-loop points a drain holds back, the knee's counterpart of _trust_sentence's caution."""
    over = [x["drain_share"] for x in points if x["drain_share"] > DRAIN_DOMINATES]
    if not over:
        return ""
    share = f"{min(over):.0%} to {max(over):.0%}" if len(over) > 1 else f"{over[0]:.0%}"
    return (
        f" Caution: at {len(over)} of the {len(points)} open-loop rates, {share} of each run is the drain (the server "
        "no longer full after the last request was sent), so those points sit left of the steady state; run more "
        "requests to move them right."
    )


def _maximum(m: dict[str, float]) -> str:
    """Where the server's maximum comes from, and why a short run's throughput stays below it."""
    return (
        f"The server's maximum, {m['max_throughput_per_s']:.1f} requests/s, is its steady rate with every batch "
        "slot busy; a run's throughput also counts its start and drain, so it stays below, bar a short run's scatter."
    )


def _trust_sentence(r: dict[str, Any]) -> str:
    """What the figures at the chosen rate rest on: warm-up, sample count, drain."""
    m = r["metrics"]
    out = []
    if "phases_ignored" in r:
        out.append(
            f"A warm-up and cool-down of {r['phases_ignored']} would leave no request of this run to measure, "
            "so these figures measure the whole run: run more requests or choose a shorter warm-up."
        )
    elif r["warmup"] != "0":
        out.append(
            f"Keeping the warm-up and cool-down, measured throughput is {m['request_throughput_warmup_kept_per_s']:.2f} req/s."
        )
    if m["few_samples_for_p99"]:
        out.append(
            f"Caution: a p99 of {int(m['ttft_samples'])} requests is set by one or two of them; run at least {loadgen.FEW_SAMPLES}."
        )
    if m["drain_share"] > DRAIN_DOMINATES:
        out.append(
            f"Caution: {m['drain_share']:.0%} of this run is the drain (the server no longer full after the last request was sent): "
            "its throughput is below the steady state; run more requests."
        )
    return " ".join(out)
