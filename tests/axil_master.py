"""An AXI4-Lite master for amaranth.sim testbenches (tests/test_axi_faults.py, tests/test_control_checks.py):
one write or read at a time, each channel's valid dropped on the cycle it is taken, as a host bridge would."""


async def axil_write(ctx, bus, offset, value, *, domain="sync"):
    ctx.set(bus.awaddr, offset)
    ctx.set(bus.awvalid, 1)
    ctx.set(bus.wdata, value)
    ctx.set(bus.wstrb, 0xF)
    ctx.set(bus.wvalid, 1)
    ctx.set(bus.bready, 1)
    aw = w = False
    while not (aw and w):
        aw_take, w_take = ctx.get(bus.awready) and not aw, ctx.get(bus.wready) and not w
        await ctx.tick(domain)
        if aw_take:
            aw = True
            ctx.set(bus.awvalid, 0)
        if w_take:
            w = True
            ctx.set(bus.wvalid, 0)
    await ctx.tick(domain).until(bus.bvalid)


async def axil_read(ctx, bus, offset, *, domain="sync"):
    ctx.set(bus.araddr, offset)
    ctx.set(bus.arvalid, 1)
    ctx.set(bus.rready, 1)
    await ctx.tick(domain).until(bus.arready)
    ctx.set(bus.arvalid, 0)
    while not ctx.get(bus.rvalid):
        await ctx.tick(domain)
    value = ctx.get(bus.rdata)
    await ctx.tick(domain)
    return value
