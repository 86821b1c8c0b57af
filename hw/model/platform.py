"""The card's platform as the host sees it: the one definition of the PCIe link's measured rates.

The Varium C1100 (and the Alveo U55N it shares its xcu55n with) sits on a PCIe Gen3 x4 link: measured on
the reference platform, 128 MiB took about 41 ms to the card and 55 ms back, about 3.24 GB/s to and 2.38
GB/s from the card (GB = 10^9 bytes). The stand-in card's timing model (sim.fake_pyxrt.LinkTiming) and
the run report's projected end-to-end time (host/run_report.py) both take them from here.
"""

__all__ = ["PCIE_TO_CARD_GBPS", "PCIE_FROM_CARD_GBPS", "PCIE_LINK", "pcie_seconds"]

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
