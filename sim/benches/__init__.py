"""nantucket.sim.benches: the cocotb benches, one module per block under test (the pytest entry
for each is tests/test_<block>.py).
"""
