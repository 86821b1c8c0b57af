"""nantucket.hw.flow: the build flow (component catalog, simulator runner and build folder, synthesis,
constraints and the crossings check, the Vitis packaging and its SLR plan).
"""
