"""How answers are computed: closed forms, exact enumeration, samplers and risk measures."""
