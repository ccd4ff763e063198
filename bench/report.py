"""Markdown tables of one results file: ``python bench/report.py [bench/results/latest.json]``.

Prints the machine and the tables that BENCHMARKS.md carries, so the page is regenerated, not retyped.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

DEFAULT = Path(__file__).resolve().parent / "results" / "latest.json"


def fmt(value: Any) -> str:
    """A cell."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:,.0f}"
    return str(value)


def table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def s1_rows(
    label: str, block: dict[str, Any], litellm: dict[str, Any] | None, *, relay: bool = False
) -> list[list[Any]]:
    """p50 and p99 rows of one S1 block; ``relay``: with the byte relay's columns (bench/relay.py)."""
    rows = []
    for stat in ("p50_ms", "p99_ms"):
        cmp = block["gateway_vs_direct"][stat]
        row = [f"{label} {stat[:3]}", cmp["direct"], cmp["gateway"], cmp["difference"], cmp["ratio"]]
        if litellm is not None:
            row.append(litellm["sides"]["litellm"][stat] if "litellm" in litellm["sides"] else None)
        if relay:
            floor = block["sides"]["relay"][stat]
            row += [floor, _minus(cmp["gateway"], floor)]
        rows.append(row)
    delta = block["gateway_vs_direct"]["median_round_delta_ms"]
    rows.append(
        [f"{label} median per-round delta", "", "", delta, "", *([""] if litellm is not None else [])]
    )
    if relay:
        floor_delta = block["relay_vs_direct"]["median_round_delta_ms"]
        rows[-1] += [floor_delta, _minus(delta, floor_delta)]
    return rows


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round(a - b, 3)


def render(report: dict[str, Any]) -> str:
    """Everything, as Markdown."""
    env = report["environment"]
    sc = report["scenarios"]
    out = [
        f"Run {report['started_utc']} ({report['config']['command']}), {report['duration_s']} s. "
        f"Machine: {env['nproc']} cores, {env['cpu']}, {env['memory_gib']} GiB, Python {env['python']}, "
        f"{env['platform']}. Load average during the run: "
        + "; ".join(f"{when}: {value.split(' ')[0]}" for when, value in report.get("load", [])),
        "",
        "**S1: added latency at concurrency 1 (ms; rounds of 25 after 50 warm-up calls)**",
        "",
    ]
    chat = sc.get("S1_chat", {})
    relay = "relay" in sc["S1"]["non_streaming"]["sides"]  # runs before 2026-12-02 had no relay
    rows = s1_rows("Responses non-streaming", sc["S1"]["non_streaming"], None, relay=relay)
    rows += s1_rows("Responses streaming TTFT", sc["S1"]["streaming_ttft"], None, relay=relay)
    header = ["", "direct", "SubLane", "difference", "ratio"]
    out.append(table(header + (["byte relay", "SubLane − relay"] if relay else []), rows))
    if relay:
        out += [
            "",
            "The byte relay (bench/relay.py) pipes the same calls to the mock on the gateway's core "
            "without parsing them: its difference over direct is what any proxy process pays here "
            "(loopback hops, waking an idle core), the floor under SubLane's.",
        ]
    feats = sc.get("S1_features")
    if feats:
        out += ["", "**S1, pricing the features: added p50 / p99 over direct (ms)**", ""]
        names = [n for n in feats["non_streaming"]["sides"] if n != "direct"]
        rows = []
        for label in ("non_streaming", "streaming_ttft"):
            block = feats[label]
            cells = [block[f"{n}_vs_direct"] for n in names]
            rows.append(
                [label] + [f"{c['p50_ms']['difference']} / {c['p99_ms']['difference']}" for c in cells]
            )
        out.append(table(["", *names], rows))
    xlat = sc.get("S1_translation")
    if xlat:
        out += [
            "",
            "**S1, the price of translation: added p50 / p99 over the upstream called directly (ms)**",
            "",
        ]
        cells = [
            ("codex", "responses_on_codex", "Responses → Codex (pass-through)"),
            ("codex", "messages_on_codex", "Messages → Codex (translated)"),
            ("claude", "messages_on_claude", "Messages → Claude (pass-through)"),
            ("claude", "responses_on_claude", "Responses → Claude (translated)"),
        ]
        rows = []
        for label in ("non_streaming", "streaming_ttft"):
            row: list[Any] = [label]
            for upstream, name, _title in cells:
                cmp = xlat[label][upstream][f"{name}_vs_direct"]
                row.append(f"{cmp['p50_ms']['difference']} / {cmp['p99_ms']['difference']}")
            rows.append(row)
        out.append(table(["", *(title for _u, _n, title in cells)], rows))
    if chat:
        out += ["", "**S1, Chat Completions, with LiteLLM proxy (ms)**", ""]
        rows = s1_rows("chat non-streaming", chat["non_streaming"], chat["non_streaming"])
        rows += s1_rows("chat streaming TTFT", chat["streaming_ttft"], chat["streaming_ttft"])
        out.append(table(["", "direct", "SubLane", "difference", "ratio", "LiteLLM"], rows))
    for key, title in (("S2", "Responses"), ("S2_chat", "Chat Completions")):
        if key not in sc:
            continue
        s2 = sc[key]
        names = list(s2["levels"])
        out += [
            "",
            f"**S2: concurrency sweep, {title}, non-streaming, instant mock "
            f"({s2['seconds_per_level']} s per level)**",
            "",
        ]
        header = ["concurrency"] + [f"{n} rps / p99 ms" for n in names]
        rows = []
        for i, level in enumerate(s2["levels"][names[0]]):
            rows.append(
                [level["concurrency"]]
                + [f"{s2['levels'][n][i]['rps']:,.0f} / {fmt(s2['levels'][n][i]['p99_ms'])}" for n in names]
            )
        out.append(table(header, rows))
        out += [""]
        rows = []
        for budget in (10, 50, 100):
            k = f"rps_at_p99_le_{budget}ms"
            rows.append([f"best rps with p99 ≤ {budget} ms"] + [s2["summary"][n][k] for n in names])
        out.append(table(["", *names], rows))
        guard = "; ".join(
            f"{n}: peak {g['peak_rps']:,.0f} rps vs direct {g['direct_peak_rps']:,.0f} "
            f"→ mock-bound: {fmt(g['mock_bound'])}"
            for n, g in s2["mock_bound_guard"].items()
        )
        out += ["", f"Mock-bound guard: {guard}."]
    if "S4" in sc:  # absent from a BENCH_ONLY=S1 run
        s4 = sc["S4"]
        out += ["", f"**S4: paced streams ({s4['deltas']} deltas every {s4['pacing_ms']} ms; ms)**", ""]
        rows = []
        for row in s4["levels"]:
            d, g = row["direct"], row["gateway"]
            rows.append(
                [
                    row["streams"],
                    f"{d['ttft_p50_ms']} / {g['ttft_p50_ms']}",
                    row["added_ttft_p50_ms"]["difference"],
                    f"{d['gap_p50_ms']} / {g['gap_p50_ms']}",
                    f"{d['gap_p99_ms']} / {g['gap_p99_ms']}",
                    row["added_gap_p99_ms"]["difference"],
                    f"{d['frames_lost']} / {g['frames_lost']}",
                    f"{d['complete']} / {g['complete']}",
                ]
            )
        out.append(
            table(
                [
                    "streams",
                    "TTFT p50 direct / SubLane",
                    "added TTFT p50",
                    "gap p50 direct / SubLane",
                    "gap p99 direct / SubLane",
                    "added gap p99",
                    "frames lost direct / SubLane",
                    "complete direct / SubLane",
                ],
                rows,
            )
        )
        out += [
            "",
            f"Highest level with zero lost frames: direct {s4['highest_zero_loss']['direct']}, "
            f"SubLane {s4['highest_zero_loss']['gateway']}.",
        ]
    if "S6" in sc:  # absent from a BENCH_ONLY=S1 run
        s6 = sc["S6"]
        out += ["", "**S6: memory (SubLane process RSS)**", ""]
        out.append(
            table(
                [
                    "idle RSS MB",
                    "streams",
                    "soak s",
                    "peak RSS MB",
                    "RSS after MB",
                    "growth MB/min (after 30 s)",
                    "streams completed",
                    "frames lost",
                    "CPU share of core 0",
                ],
                [
                    [
                        s6["idle_rss_mb"],
                        s6["streams"],
                        s6["seconds"],
                        s6["rss_peak_mb"],
                        s6["rss_after_mb"],
                        s6["growth_mb_per_min_after_30s"],
                        s6["streams_completed"],
                        s6["frames_lost"],
                        s6.get("gateway_cpu_share_of_core"),
                    ]
                ],
            )
        )
    if "S7" in sc:  # absent from a BENCH_ONLY=S1 run
        s7 = sc["S7"]
        out += ["", "**S7: cancellation (client hangs up after 3 deltas of a long stream)**", ""]
        out.append(
            table(
                [
                    "trials",
                    "upstream cancelled after p50 / max ms",
                    "within 100 ms",
                    "lease back (next call done) p50 / max ms",
                    "next call failed",
                ],
                [
                    [
                        s7["trials"],
                        f"{s7['upstream_cancelled_after_p50_ms']} / {s7['upstream_cancelled_after_max_ms']}",
                        s7["cancelled_within_100ms"],
                        f"{s7['lease_back_p50_ms']} / {s7['lease_back_max_ms']}",
                        s7["next_call_failed"],
                    ]
                ],
            )
        )
    if "verdict" in report:
        out += ["", "**Targets**", ""]
        rows = []
        for name, v in report["verdict"].items():
            value = {k: x for k, x in v.items() if k not in ("met", "figures")}
            rows.append([name, json.dumps(value) if value else "", v["met"]])
        out.append(table(["target", "value", "met"], rows))
        litellm = report["verdict"].get("better_than_litellm_everywhere", {}).get("figures")
        if litellm:
            out += [
                "",
                table(
                    [
                        "figure (S1 ms: lower is better; S2 rps: higher is better)",
                        "SubLane",
                        "LiteLLM",
                        "SubLane better",
                    ],
                    [[k, v["gateway"], v["litellm"], v["better"]] for k, v in litellm.items()],
                ),
            ]
    out += ["", f"LiteLLM: {report.get('litellm', {}).get('note', '')[:300]}"]
    return "\n".join(out)


def main() -> None:
    """Print the tables of the given (or latest) results file."""
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    print(render(json.loads(path.read_text())))


if __name__ == "__main__":
    main()
