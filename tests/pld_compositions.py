"""PLD compositions made once for the tests that read one composition several times.

A composed ``dp-accounting`` PLD depends only on ``composed_pld``'s arguments (the query
groups, the loss grid, the discretisation), not on the delta or prior read from it, and reading
an epsilon or a hockey-stick divergence leaves it as it was: the same answers, bit for bit.
"""


def compose_once(module, monkeypatch, store: dict | None = None) -> dict:
    """Have ``module.composed_pld`` compose each distinct set of arguments once.

    The compositions are kept in ``store`` (a new dict if not given; pass a module-scoped one
    to share them across tests), keyed by ``(repr(queries), interval, options)``; the patch is
    undone with ``monkeypatch``. Returns ``store``.
    """
    store = {} if store is None else store
    compose = module.composed_pld

    def composed_once(queries, interval, **options):
        key = (repr(queries), interval, tuple(sorted(options.items())))
        if key not in store:
            store[key] = compose(queries, interval, **options)
        return store[key]

    monkeypatch.setattr(module, "composed_pld", composed_once)
    return store
