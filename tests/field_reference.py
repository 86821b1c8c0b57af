"""The fields as the prover libraries define them, and the transform's O(N^2) sums on Python ints: the
independent reference the field tests compare the code under test with (nothing here is read from it).

X_k = sum_j x_j c^j w^(jk), w = g^((p-1)/N); the inverse x_j = c^(-j) N^(-1) sum_k X_k w^(-jk); an "r" in
the order bit-reverses the input (first letter) or the output (second).
"""

#: name: (p, generator, 2-adicity), as plonky2, Plonky3, RISC Zero and SP1 publish them.
SPEC = {
    "goldilocks": (2**64 - 2**32 + 1, 7, 32),
    "goldilocks-plonky2": (2**64 - 2**32 + 1, 14293326489335486720, 32),
    "babybear": (2**31 - 2**27 + 1, 31, 27),
    "koalabear": (2**31 - 2**24 + 1, 3, 24),
}
NAMES = list(SPEC)


def root(name: str, n: int) -> int:
    """The n-th root of unity the field's chain uses: g^((p-1)/n)."""
    p, g, _ = SPEC[name]
    return pow(g, (p - 1) // n, p)


def rev(i: int, k: int) -> int:
    return int(format(i, f"0{k}b")[::-1], 2) if k else 0


def naive(x, name: str, *, inverse: bool = False, coset: int | None = None, order: str = "nn") -> list[int]:
    """The transform of one row (ints) in the field named, from the sums."""
    p, _, _ = SPEC[name]
    n = len(x)
    k = n.bit_length() - 1
    x = [int(v) for v in x]
    if order[0] == "r":
        x = [x[rev(j, k)] for j in range(n)]
    w = root(name, n)
    c = 1 if coset is None else coset % p
    if inverse:
        w, c = pow(w, p - 2, p), pow(c, p - 2, p)
    table = [pow(w, e, p) for e in range(n)]
    out = []
    for kk in range(n):
        if inverse:
            acc = sum(v * table[(j * kk) % n] for j, v in enumerate(x)) % p
            out.append(acc * pow(n, p - 2, p) % p * pow(c, kk, p) % p)
        else:
            out.append(sum(v * pow(c, j, p) * table[(j * kk) % n] for j, v in enumerate(x)) % p)
    if order[1] == "r":
        out = [out[rev(i, k)] for i in range(n)]
    return out
