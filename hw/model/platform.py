"""The card's platform as the host sees it: the one definition of the PCIe link's measured rates.

The Varium C1100 (and the Alveo U55N it shares its xcu55n with) sits on a PCIe Gen3 x4 link: measured on
the reference platform, 128 MiB took about 41 ms to the card and 55 ms back, about 3.24 GB/s to and 2.38
GB/s from the card (GB = 10^9 bytes). The stand-in card's timing model (sim.fake_pyxrt.LinkTiming) and
the run report's projected end-to-end time (host/run_report.py) both take them from here.

The card's user budget, what a kernel may use of the xcu55n once the platform (shell) has taken its part,
is here too: from the reference platform's utilisation report (the platform itself takes 120,401 LUT,
133 BRAM36 and 4 DSP48E2). The resource benches (scripts/bench_budget.py, scripts/bench_shift.py) take
their percentages and the figure of merit's sum of utilisation fractions against it.
"""

__all__ = ["PCIE_TO_CARD_GBPS", "PCIE_FROM_CARD_GBPS", "PCIE_LINK", "pcie_seconds", "CARD_BUDGET",
           "utilisation_sum"]

#: Host to card, GB/s (10^9 bytes a second)
PCIE_TO_CARD_GBPS = 3.24
#: Card to host, GB/s
PCIE_FROM_CARD_GBPS = 2.38
#: The link, in words (for reports)
PCIE_LINK = "PCIe Gen3 x4"


def pcie_seconds(to_card_bytes: int, from_card_bytes: int) -> float:
    """Seconds the link takes to move ``to_card_bytes`` to the card and then ``from_card_bytes`` back
    (one after the other, at the measured rates)."""
    return to_card_bytes / (PCIE_TO_CARD_GBPS * 1e9) + from_card_bytes / (PCIE_FROM_CARD_GBPS * 1e9)


#: The Varium C1100's user budget: LUT, DSP48E2, BRAM (RAMB36) and URAM as the platform report gives them;
#: FF "about 1.6 M" (two per LUT site, less the platform's), so a sum with FF in it is approximate there.
CARD_BUDGET = {"LUT": 750_319, "FF": 1_600_000, "DSP48E2": 5_948, "BRAM": 1_211, "URAM": 640}


def utilisation_sum(used: dict) -> float:
    """The figure of merit's utilisation term: the sum over LUT, FF, DSP48E2, BRAM and URAM of the fraction
    of the card's user budget ``used`` takes (a dict with those keys)."""
    return sum(used[k] / CARD_BUDGET[k] for k in CARD_BUDGET)
