import pytest

from dprisk.models.priors import ImproperUniform, TruncatedUniform
from dprisk.models.two_level import TwoLevelParams


def test_validated_parameters_and_precision():
    params = TwoLevelParams.validated(rho1=0.1, rho2=0.25, d=27, p=0.5, known=2,
                                      prior="truncated:10")
    assert (params.rho1, params.rho2, params.d, params.p, params.known) == (0.1, 0.25, 27, 0.5, 2)
    assert params.prior == TruncatedUniform(10)
    assert params.precision == pytest.approx(0.25 + 0.1 / 27, rel=1e-15)
    assert TwoLevelParams.validated(rho1=0.1, rho2=0.25, d=3, p=0.5, known=0,
                                    prior="improper").prior == ImproperUniform()


@pytest.mark.parametrize(
    ("changes", "name"),
    [({"rho1": 0.0}, "rho1"), ({"rho2": [0.1, 0.2]}, "rho2"), ({"d": 0}, "d"), ({"p": 1.0}, "p"),
     ({"known": -1}, "known"), ({"prior": "truncated:2", "known": 2}, "prior")],
)
def test_bad_parameters_name_themselves(changes, name):
    kwargs = {"rho1": 0.1, "rho2": 0.25, "d": 3, "p": 0.5, "known": 0, "prior": "improper",
              **changes}
    with pytest.raises(ValueError, match=name):
        TwoLevelParams.validated(**kwargs)
