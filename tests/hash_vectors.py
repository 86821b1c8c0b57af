"""Known-answer vectors of the Goldilocks hashes, quoted from their references' own tests (shared test data).

Each entry names the repository, tag, commit, path and test it was copied from; the values are as the
source writes them (plonky2's in hex, with its ``neg_one`` as ``P_MINUS_1``; Winterfell's in decimal).
Used by tests/test_poseidon_goldilocks.py and tests/test_rescue.py; the schemes' tests may use them too.

Hash-level vectors: at the pinned tags neither reference has fixed known answers above the permutation.
plonky2 v1.1.0 has none for ``hash_no_pad``/``hash_or_noop``/``compress`` or its Merkle trees, and
Winterfell v0.13.1's rp64_256 tests check only relations, not values (listed in
``WINTERFELL_RP64_256_RELATIONS``): a scheme's own vectors must come from running the reference.
"""

P = 2**64 - 2**32 + 1
#: plonky2's ``F::NEG_ONE.to_canonical_u64()``
P_MINUS_1 = P - 1

PLONKY2_SOURCE = {
    "repository": "https://github.com/0xPolygonZero/plonky2",
    "tag": "v1.1.0",
    "commit": "82791c4809d6275682c34b926390ecdbdc2a5297",
    "path": "plonky2/src/hash/poseidon_goldilocks.rs",
    "test": "tests::test_vectors (test_vectors12, checked by poseidon.rs test_helpers::check_test_vectors)",
}

#: (input state, output of ``GoldilocksField::poseidon``): all zeros, 0..11, all p - 1, random elements
#: ("expected output calculated with (modified) hadeshash reference implementation", says the source)
PLONKY2_POSEIDON_GOLDILOCKS_12 = (
    (
        (
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ),
        (
            0x3c18a9786cb0b359, 0xc4055e3364a246c3, 0x7953db0ab48808f4, 0xc71603f33a1144ca,
            0xd7709673896996dc, 0x46a84e87642f44ed, 0xd032648251ee0b3c, 0x1c687363b207df62,
            0xdf8565563e8045fe, 0x40f5b37ff4254dae, 0xd070f637b431067c, 0x1792b1c4342109d7,
        ),
    ),
    (
        (
            0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
        ),
        (
            0xd64e1e3efc5b8e9e, 0x53666633020aaa47, 0xd40285597c6a8825, 0x613a4f81e81231d2,
            0x414754bfebd051f0, 0xcb1f8980294a023f, 0x6eb2a9e4d54a9d0f, 0x1902bc3af467e056,
            0xf045d5eafdc6021f, 0xe4150f77caaa3be5, 0xc9bfd01d39b50cce, 0x5c0a27fcb0e1459b,
        ),
    ),
    (
        (
            P_MINUS_1, P_MINUS_1, P_MINUS_1, P_MINUS_1,
            P_MINUS_1, P_MINUS_1, P_MINUS_1, P_MINUS_1,
            P_MINUS_1, P_MINUS_1, P_MINUS_1, P_MINUS_1,
        ),
        (
            0xbe0085cfc57a8357, 0xd95af71847d05c09, 0xcf55a13d33c1c953, 0x95803a74f4530e82,
            0xfcd99eb30a135df1, 0xe095905e913a3029, 0xde0392461b42919b, 0x7d3260e24e81d031,
            0x10d3d0465d9deaa0, 0xa87571083dfc2a47, 0xe18263681e9958f8, 0xe28e96f1ae5e60d3,
        ),
    ),
    (
        (
            0x8ccbbbea4fe5d2b7, 0xc2af59ee9ec49970, 0x90f7e1a9e658446a, 0xdcc0630a3ab8b1b8,
            0x7ff8256bca20588c, 0x5d99a7ca0c44ecfb, 0x48452b17a70fbee3, 0xeb09d654690b6c88,
            0x4a55d3a39c676a88, 0xc0407a38d2285139, 0xa234bac9356386d1, 0xe1633f2bad98a52f,
        ),
        (
            0xa89280105650c4ec, 0xab542d53860d12ed, 0x5704148e9ccab94f, 0xd3a826d4b62da9f5,
            0x8a7a6ca87892574f, 0xc7017e1cad1a674e, 0x1f06668922318e34, 0xa3b203bc8102676f,
            0xfcc781b0ce382bf2, 0x934c69ff3ed14ba5, 0x504688a5996e8f13, 0x401f3f2ed524a2ba,
        ),
    ),
)

WINTERFELL_SOURCE = {
    "repository": "https://github.com/facebook/winterfell",
    "tag": "v0.13.1",
    "commit": "2f78ee9bf667a561bdfcdfa68668d0f9b18b8315",
    "path": "crypto/src/hash/rescue/rp64_256/tests.rs",
    "test": "apply_permutation",
}

#: (input state, output of ``Rp64_256::apply_permutation``) ("expected values are obtained by executing
#: sage reference implementation code", says the source)
WINTERFELL_RP64_256 = (
    (
        (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
        (
            11084501481526603421, 6291559951628160880, 13626645864671311919,
            18397438323058963117, 7443014167353970324, 17930833023906771425,
            4275355080008025761, 7676681476902901785, 3460534574143792217,
            11912731278641497187, 8104899243369883110, 674509706691634438,
        ),
    ),
)

#: What Winterfell v0.13.1's rp64_256 tests (same path) check above the permutation, as relations: a
#: test of a sponge or tree built on "rp64-256" can check the same ones.
WINTERFELL_RP64_256_RELATIONS = (
    "hash_elements_vs_merge: merge([d0, d1]) == hash_elements(d0 + d1) for 8 random elements",
    "merge_vs_merge_many: merge([d0, d1]) == merge_many([d0, d1])",
    "hash_elements_vs_merge_with_int: merge_with_int(seed, v) == hash_elements(seed + [v]) for v < p; "
    "for v = p + 2, == hash_elements(seed + [v mod p, 1])",
    "hash_elements_padding: hash_elements([a, b]) != hash_elements([a, b, 0])",
    "hash_padding: hash(bytes) != hash(bytes + [0]) (byte hashing, 7-byte chunks)",
)
