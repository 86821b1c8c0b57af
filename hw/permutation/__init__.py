"""The permutation engine: pipelined permutation cores for the commitment hashes, generated from the golden
model's hash descriptions (hw/model/hash/), with a rate knob (docs/architecture.md, "Permutation engine").

spec.py (the description read from the model), modular.py (inline modular steps), linear.py (linear
layers by shifts and adds), sbox.py (S-box multiply chains on the multiplier seam), rom.py (per-pass round
constants), rounds.py (round units and the edge stages), sequencer.py (the folding ring's slots),
core.py (:class:`PermutationCore`).
"""

from nantucket.hw.permutation.core import PermutationCore, core_part, parse_rate

__all__ = ["PermutationCore", "parse_rate", "core_part"]
