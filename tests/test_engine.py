"""NTT engine: both passes through L lanes and the twiddle generator, on Verilator, against the model."""

import pytest

from nantucket.hw.engine import NttEngine
from nantucket.hw.model.params import BuildParams
from nantucket.hw.flow.runner import run_bench

pytestmark = pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")

# N = 2^8 with 1, 2, 4, 16 lanes; N = 2^12 with 4 and 16 lanes in make test-full (larger builds).
# L2_k4 in make test-full too (L1, L4 and L16 bracket it; make test's time is near its limit).
CONFIGS = [(1, 4), pytest.param(2, 4, marks=pytest.mark.full), (4, 4), (16, 4), pytest.param(4, 6, marks=pytest.mark.full),
           pytest.param(16, 6, marks=pytest.mark.full)]
#: The forward single-transform tests of sim/benches/engine.py (inverse and batches: test_inverse_and_batches).
FORWARD_TESTS = ["test_random_points", "test_edge_vectors", "test_every_size", "test_back_to_back"]


@pytest.mark.parametrize("lanes, k", CONFIGS, ids=["L1_k4", "L2_k4", "L4_k4", "L16_k4", "L4_k6", "L16_k6"])
def test_engine(lanes, k):
    params = BuildParams(lanes=lanes, log_core=k, channels=2)
    run_bench(NttEngine(params), name="engine", params={"params": params.as_dict()},
              test_module="nantucket.sim.benches.engine", testcase=FORWARD_TESTS)


# L4_k4 with C = 2 shares test_engine's build (C only sets min_log_n, here 4 as with C = 4)
@pytest.mark.parametrize("lanes, k, channels", [(4, 4, 2), pytest.param(8, 5, 8, marks=pytest.mark.full)],
                         ids=["L4_k4", "L8_k5_C8"])
def test_engine_inverse_and_batches(lanes, k, channels):
    """Inverse at every size, batches of 1..3 mixing kinds, switching between passes without reset,
    random stalls, exact cycle counts (sim/benches/engine.py test_inverse_and_batches)."""
    params = BuildParams(lanes=lanes, log_core=k, channels=channels)
    run_bench(NttEngine(params), name="engine", params={"params": params.as_dict()},
              test_module="nantucket.sim.benches.engine", testcase="test_inverse_and_batches")


#: One L4_k4 build in make test for goldilocks-plonky2 and BabyBear; KoalaBear's engine and BabyBear at L2_k5
#: (odd k) in make test-full (make test runs a KoalaBear lane, tests/test_lane.py: its time is near the limit).
ENGINE_FIELDS = [("goldilocks-plonky2", 4, 4), ("babybear", 4, 4),
                 pytest.param("koalabear", 4, 4, marks=pytest.mark.full),
                 pytest.param("babybear", 2, 5, marks=pytest.mark.full)]


@pytest.mark.parametrize("field, lanes, k", ENGINE_FIELDS,
                         ids=["goldilocks-plonky2", "babybear", "koalabear", "babybear_L2_k5"])
def test_engine_fields(field, lanes, k):
    """The engine of another field (one build each): every size forward with edge vectors and stalls,
    inverse and batches, and coset transforms (sim/benches/coset.py), all against the golden model in that
    field (hw.model.ntt.transform(..., field=field), fourstep.pass1(..., field=field)). BabyBear and
    KoalaBear: 31-bit points in 32-bit payload slots, Montgomery twiddle and factor words."""
    from nantucket.sim.benches.coset import coset_facts
    from nantucket.sim.benches.lib import edge_values
    params = BuildParams(lanes=lanes, log_core=k, channels=2, field=field)
    engine = NttEngine(params)
    assert engine._lanes[0].field is params.prime_field
    assert edge_values(field)[:5] == (0, 1, 2, params.prime_field.p - 1, params.prime_field.p - 2)
    run_bench(engine, name="engine", params={"params": params.as_dict()},
              test_module="nantucket.sim.benches.engine",
              testcase=["test_edge_vectors", "test_every_size", "test_inverse_and_batches"])
    run_bench(engine, name="engine", params={"params": params.as_dict()}, test_module="nantucket.sim.benches.coset",
              facts=coset_facts(engine))


def test_engine_ports_for_the_kernel():
    """What the kernel wires: the run as one port of hw.run.run_layout (``batch`` up to ``max_batch`` =
    as many transforms of the smallest size as points in the largest), handed whole to the twiddle and
    coset factor generators and field by field (lane_run_layout) to the lanes; an unknown keyword is a
    TypeError."""
    from amaranth.hdl import Fragment
    from nantucket.hw.run import lane_run_layout, run_layout
    params = BuildParams()
    engine = NttEngine(params)
    assert engine.max_batch == 2 ** (params.max_log_n - params.min_log_n) == 2 ** 16
    assert engine.run.shape() == run_layout(params)
    assert run_layout(params)["batch"].width == engine.max_batch.bit_length()
    assert engine.signature.members.keys() >= {"start", "pass2", "run"} and "log_n" not in engine.signature.members
    small = NttEngine(BuildParams(lanes=2, log_core=4, channels=2))
    Fragment.get(small, None)                  # elaborates with the run wired to every block
    lane = small._lanes[0]
    assert lane.run.shape() == lane_run_layout(4)
    with pytest.raises(TypeError, match="scale"):
        NttEngine(params, scale="output")


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="params"):
        NttEngine(BuildParams(lanes=4).as_dict())


def test_default_engine_multiplier_budget():
    """16 lanes x (6 general butterflies + 4 output-scale units) = 160 multiply/reduce units = 1,920
    DSP48E2; the twiddle generator is a ROM. The coset transforms run on the output scales and add only
    the engine's factor generator (4 units): 164 units, 1,968 DSP48E2, 120 a lane."""
    engine = NttEngine(BuildParams())
    assert engine.mul_units == 16 * (6 + 4) + 4
    assert engine.dsp_tiles == 164 * 12 == 1968 and engine._lanes[0].dsp_tiles == 120
    assert engine.beats_per_pass == 2**19
