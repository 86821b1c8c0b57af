"""Coset transforms in the engine: the one shared generator of the coset's factors.

The math (hw/model/coset.py): each lane applies the shift's powers on its output scale's multipliers
(hw/output_scale.py, placed at the lane's head forward, its tail inverse), once per point per pass, as
S * K: S the pass's *stream*, the same pair for every lane on a cycle, b^i0 and b^i1 at the positions
(i0, i1) of the pair (b = G = g^N2 in forward pass 1, H = h^N1 in inverse pass 2), and K each lane's
*frame word*, constant over its frame (g^n2 forward, h^k1 / N inverse); forward pass 2 applies the
four-step factor at its head instead and takes the frame's row as its frame word. No lane holds a
multiplier for the coset.

``CosetFactors`` (one per engine, four multiply/reduce units) computes both from the shift g:

- in the background, whenever the shift differs from the one it last worked on: h = g^(p-2) by
  right-to-left square-and-multiply on one unit, keeping the squares g^(2^i), then h^(2^i), i < 2k
  (the "chains", 4k words); (64 + 2k) rounds of 14 cycles (1,232 at k = 12), once per shift;
- at the start of a streaming pass (forward pass 1, inverse pass 2): two tables, LO[j] = b^j (j < 2^s)
  and HI[i] = b^(i 2^s) (i < 2^(f-s)), s = floor(f/2), built level by level by doubling from the chain words b^(2^t) (one unit per table;
  a level starts as soon as the entries it reads are written: 110 cycles at f = 12);
  one set of tables per direction, kept while the shift stays: a pass with the same shift, direction and
  n as the last one in its set reuses them;
- then, one enabled cycle at a time, the factors b^i = HI[i >> s] * LO[i & (2^s - 1)] of the two positions
  the lanes' output scales meet (the lane input order forward, offset by the input register; the output
  order inverse, offset by the lanes' latency to their output scales), the same two units, latency 13;
- the frame words, on the fourth unit: at the pass start K0_l = c b^l for the L lanes (c = 1 forward,
  1/N inverse; log2 L doubling levels from the chain words b^(2^t), b = g or h), which are round 0's;
  while round g streams, round g + 1's, K_l x b^L, L products (``frame_word_job_cycles``), swapped in at
  the frame edge one enabled cycle ahead of the multipliers (the output scale takes its frame word a
  cycle early); a round shorter than the job (frames of 2^(f-1) < L + 14 cycles) waits for it
  (``frame_word_stall_cycles``). Forward pass 2's rows are counted, nothing computed.
  It reports ``ready`` once the first factors and words are at its outputs; the engine holds its first
  payload until then.

The stream repeats with every frame, so a batch of transforms needs nothing more, unless the run has a
``row_step`` s > 1 (element r of the batch has the shift g s^r, hw/model/coset.py "Row steps"):

- the chain job runs a second time, for s (s^(2^i) and (s^-1)^(2^i), another ``chain_cycles``, in the
  background whenever s changes, like the shift's);
- a stepping pass builds a third set of tables, the step's (LOc, HIc, from s's chain words: another
  ``build_cycles(f)``), after the shift's;
- a stepping pass also doubles the step's lane powers S_l = s'^l with K0 (twice the set-up products); at
  an element start the round's job is K0_l x S_l (the next element's K0, kept) and b^L x s'^L;
- element 0 streams from the shift's tables; while element r streams, the chain unit (idle once the
  chains are there) computes element r + 1's tables into one of two work sets, LO[j] x LOc[j] and HI[i] x
  HIc[i], one product a cycle (``update_cycles(f)``: 2^s + 2^(f-s) products, its reads and the
  multiplier's latency); the stream changes sets where the next element starts (every
  ``element_cycles`` = 2^n / 2L enabled cycles; inverse: offset by the lanes' latency to their output
  multipliers). Where the next set is not ready yet (an element shorter than the update), ``ready``
  falls and the engine waits: ``step_stall_cycles(f, n)`` a boundary, 0 from 2^n >= 2L x
  update_cycles(f). No multiplier is added; the tables hold five sets (two directions, the step, two work
  sets) instead of two.

Fields whose multiplier takes encoded words (Montgomery form in BabyBear and KoalaBear, hw/multiplier.py):
every chain word, table entry, factor and frame word is kept as the multiplier's word (a product of two words is the
word of the product), so the output scale's products are canonical field values. The shift arrives as a
canonical value: the chain job's first round multiplies it by encode(encode(1)) (2^64 mod p), which gives
its word; tables start from encode(1). The figures above are Goldilocks'; a 31-bit field's exponent has
31 bits and a round is 11 cycles ((1 + 31 + 2k) rounds).

Units (one file each), composed by ``CosetFactors`` (factors.py): ``ChainJob`` (chain.py), ``TableBuilder``
(tables.py), ``FactorStream`` and the tables' memories (stream.py), ``RowStepUpdater`` (rows.py) and
``FrameWords`` (words.py) each publish their cycle figures and a bit-exact ``model()`` built on the golden
model (hw/model/coset.py); ``PassControl`` (control.py) latches the run and sequences a pass's states
(its own ``latency``). tests/test_coset_units.py holds the units' models and figures to the generator's.
"""

from .factors import CosetFactors

__all__ = ["CosetFactors"]
