"""The population's inputs: the synthetic state, the persons file, prior files (issue 34)."""

import json

import numpy as np
import pandas as pd
import pytest

from dprisk.inference.population import synth
from dprisk.inference.population.categories import BAND_LABELS, band_index
from dprisk.inference.population.persons import read_persons
from dprisk.inference.population.priors import read_prior_file, tract_priors


def test_synth_bands_hold_their_2010_share_exactly():
    persons = synth.synthesize(40_000, 3)
    sizes = persons.groupby("geoid").size().to_numpy()
    by_band = np.bincount(band_index(sizes), weights=sizes, minlength=len(BAND_LABELS))
    assert by_band.sum() == 40_000
    np.testing.assert_array_equal(by_band, synth._persons_per_band(40_000))
    shares = np.asarray(synth.PERSONS_BY_BAND_2010) / sum(synth.PERSONS_BY_BAND_2010)
    # largest remainders: within one person of the exact share, except bands too small for
    # one block, passed down (here 1000+: 1,819 persons, more than one block's 1,000)
    assert np.all(np.abs(by_band - 40_000 * shares) < 1)


def test_synth_is_seeded_and_plausible():
    a, b = synth.synthesize(8000, 11), synth.synthesize(8000, 11)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(synth.synthesize(8000, 12))
    assert a.geoid.is_monotonic_increasing and a.geoid.str.len().eq(15).all()
    assert 0.70 < a.votingage.mean() < 0.82  # 76 % in households, more in most GQs
    assert (a.hhgq > 0).mean() < 0.15
    with pytest.raises(ValueError, match="persons"):
        synth.synthesize(0, 1)


@pytest.mark.parametrize("state", ["\uff10\uff11", "\u00b2\u00b3", "\u0660\u0661", "1", "012"])
def test_synth_state_is_two_ascii_digits(state):
    """str.isdigit took "０１" and "²³": GEOIDs "０１0010001001000" that measure and risk refuse."""
    with pytest.raises(ValueError, match="state must be a two-digit FIPS code"):
        synth.synthesize(10, 1, state=state)


def test_geoids_and_geocodes_are_ascii_digits():
    """A spine code ending in full-width digits was converted to a GEOID of them; a GEOID
    followed by a newline matched GEOID_PATTERN ("$" matches before a final newline)."""
    from dprisk.inference.population.geography import GEOID_PATTERN, geocode_to_geoid
    from dprisk.inference.population.measure import block_counts

    code = "050" + "001000" + "0001" + "01" + "5000100010011001"
    assert list(geocode_to_geoid([code])) == ["500010001001001"]
    with pytest.raises(ValueError, match="16-digit tabulation code"):
        geocode_to_geoid([code[:-2] + "\uff10\uff11"])
    assert GEOID_PATTERN.match("010010001001001") and not GEOID_PATTERN.match(
        "010010001001001\n")
    with pytest.raises(ValueError, match="not a 15-digit block GEOID"):
        block_counts(pd.DataFrame({"geoid": ["010010001001001\n"], "hhgq": [0], "votingage": [1],
                                   "hispanic": [0], "cenrace": [1]}))


def _frame(**changes):
    frame = pd.DataFrame({"geoid": ["010010001001001", "010010001001002"], "hhgq": [0, 3],
                          "votingage": [1, 0], "hispanic": [0, 1], "cenrace": [1, 63]})
    for column, (row, value) in changes.items():
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
    return frame


def test_read_persons_csv_keeps_leading_zeros(tmp_path):
    path = tmp_path / "p.csv"
    _frame().to_csv(path, index=False)
    frame = read_persons(path)
    assert list(frame.geoid) == ["010010001001001", "010010001001002"]
    assert list(frame.cenrace) == [1, 63]


@pytest.mark.parametrize("changes, words", [
    ({"geoid": (1, "10010001001002")}, ["geoid", "row 1"]),
    ({"cenrace": (0, 64)}, ["cenrace", "row 0", "1-63"]),
    ({"hhgq": (1, 8)}, ["hhgq", "row 1"]),
    ({"votingage": (1, 1.5)}, ["votingage", "row 1", "integer"]),
    ({"hispanic": (0, "x")}, ["hispanic", "row 0"]),
])
def test_read_persons_names_the_column_and_row(tmp_path, changes, words):
    path = tmp_path / "p.csv"
    _frame(**changes).to_csv(path, index=False)
    with pytest.raises(ValueError) as err:
        read_persons(path, name="--persons")
    assert all(word in str(err.value) for word in ["--persons", str(path), *words])


def test_read_persons_refuses_other_files(tmp_path):
    with pytest.raises(ValueError, match="not a Parquet or CSV"):
        read_persons(tmp_path / "p.txt")
    (tmp_path / "p.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match="not a readable parquet"):
        read_persons(tmp_path / "p.parquet")
    typed = _frame().astype({"cenrace": "int16"})
    typed.loc[1, "cenrace"] = 64
    typed.to_parquet(tmp_path / "r.parquet")
    with pytest.raises(ValueError, match="cenrace: row 1 holds 64"):
        read_persons(tmp_path / "r.parquet")
    _frame().drop(columns="cenrace").to_csv(tmp_path / "q.csv", index=False)
    with pytest.raises(ValueError, match=r"missing column.*cenrace"):
        read_persons(tmp_path / "q.csv")


@pytest.mark.parametrize("column, value, allowed", [
    ("cenrace", 0, "1-63"), ("cenrace", 64, "1-63"), ("hhgq", 8, "0-7"),
    ("votingage", 2, "0-1"), ("hispanic", -1, "0-1"),
])
def test_population_risk_checks_a_persons_frame_as_a_file(column, value, allowed):
    """dr.population.risk took a DataFrame unchecked: cenrace 0 (the DAS's 0-based index)
    made category -1, read as the previous group's last cell (posterior_true 0.0), votingage
    2 read the cells of hhgq 1, cenrace 64 those of the next category; every answer came
    back without a word. A frame is now checked as a file's rows are."""
    from population_helpers import measure

    from dprisk.inference.population.risk import population_risk

    frame = _frame()
    meas = measure(frame, 10.0, seed=1)
    frame.loc[1, column] = value
    with pytest.raises(ValueError, match=f"persons: column {column}: row 1 holds {value}, "
                                         f"outside {allowed}"):
        population_risk(frame, meas, adversary="informed")


def test_a_directory_given_as_a_file_is_named_a_directory(tmp_path):
    """A Parquet dataset folder (Spark writes persons.parquet/part-*.parquet) given as the
    persons or noisy file was refused as 'no such file', though it was there."""
    from dprisk.inference.population.measurements import read_noisy_table

    folder = tmp_path / "persons.parquet"
    folder.mkdir()
    _frame().to_parquet(folder / "part-0.parquet")
    with pytest.raises(ValueError, match=r"^--persons '.*persons.parquet': a directory, not a "
                                         r"file \(give one Parquet or CSV file\)$"):
        read_persons(folder, name="--persons")
    with pytest.raises(ValueError, match=r"persons.parquet: a directory, not a file"):
        read_noisy_table(folder)


def test_prior_files(tmp_path):
    values = np.random.default_rng(1).dirichlet(np.ones(126))
    (tmp_path / "a.json").write_text(json.dumps({"probabilities": values.tolist()}))
    (tmp_path / "b.json").write_text(json.dumps(values.tolist()))
    (tmp_path / "c.csv").write_text("category,probability\n" + "".join(
        f"{c},{float(v)!r}\n" for c, v in reversed(list(enumerate(values)))))
    for name in ("a.json", "b.json", "c.csv"):
        np.testing.assert_allclose(read_prior_file(tmp_path / name), values, rtol=1e-15)
    bad = {"sum.json": json.dumps([0.5] * 126), "neg.json": json.dumps([-0.5, 1.5] + [0] * 124),
           "short.json": json.dumps([1.0]),
           "missing.csv": "category,probability\n0,1.0\n",
           "twice.csv": "category,probability\n0,0.5\n0,0.5\n",
           "header.csv": "c,p\n"}
    for name, text in bad.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=name):
            read_prior_file(tmp_path / name)


def test_a_prior_csv_row_of_nan_is_named_as_such_and_a_repeat_of_it_refused(tmp_path):
    """The CSV reader marked unread categories with NaN, so a row '5,nan' was reported as
    'category 5 has no row', and a later row '5,0.1' was taken silently (not 'given twice');
    a negative JSON value was quoted as np.float64(-0.0079...)."""
    rows = "".join(f"{c},{'nan' if c == 5 else repr(1 / 126)}\n" for c in range(126))
    (tmp_path / "nan.csv").write_text("category,probability\n" + rows)
    with pytest.raises(ValueError, match=r"'.*nan.csv': category 5: probability nan is not a "
                                         r"finite number >= 0$"):
        read_prior_file(tmp_path / "nan.csv")
    (tmp_path / "nan_again.csv").write_text("category,probability\n" + rows + "5,0.1\n")
    with pytest.raises(ValueError, match=r"line 128: category 5 is outside 0-125 or given "
                                         r"twice$"):
        read_prior_file(tmp_path / "nan_again.csv")
    (tmp_path / "neg.json").write_text(json.dumps([-0.5, 1.5] + [0] * 124))
    with pytest.raises(ValueError, match=r"category 0: probability -0\.5 is not a finite"):
        read_prior_file(tmp_path / "neg.json")


@pytest.mark.parametrize("name", ["bom.json", "bom.csv"])
def test_a_prior_file_with_a_utf8_byte_order_mark_is_read(tmp_path, name):
    """A UTF-8 file starting with a byte order mark (Excel's "CSV UTF-8") was refused: the CSV
    as "the first line must be the header category,probability" (it was, after the mark),
    the JSON as "not JSON (Unexpected UTF-8 BOM ...)"; the persons and noisy CSV readers
    read such files."""
    values = np.random.default_rng(2).dirichlet(np.ones(126))
    text = (json.dumps({"probabilities": values.tolist()}) if name.endswith("json")
            else "category,probability\r\n" + "".join(f"{c},{float(v)!r}\r\n"
                                                     for c, v in enumerate(values)))
    (tmp_path / name).write_bytes(text.encode("utf-8-sig"))
    np.testing.assert_allclose(read_prior_file(tmp_path / name, name="--prior"), values,
                               rtol=1e-15)


@pytest.mark.parametrize("name", ["latin.json", "latin.csv"])
def test_a_prior_file_not_in_utf8_is_refused_naming_the_option_and_the_file(tmp_path, name):
    """A Latin-1 byte used to escape as UnicodeDecodeError ('utf-8' codec can't decode ...),
    naming neither the option nor the file."""
    text = (json.dumps({"probabilities": [1 / 126] * 126, "note": "é"}, ensure_ascii=False)
            if name.endswith("json")
            else "category,probability\n" + "".join(f"{c},{1 / 126!r}\n" for c in range(126))
            + "# é\n")
    (tmp_path / name).write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=rf"^--prior '.*{name}': not UTF-8 text \(byte 0xe9 "):
        read_prior_file(tmp_path / name, name="--prior")


def test_tract_prior_is_the_tract_composition_by_voting_age():
    tract = np.array([0, 0, 0, 1, 1])
    votingage = np.array([1, 1, 0, 1, 1])
    cats = np.array([5, 7, 5, 2, 2])
    rows = tract_priors(tract, votingage, cats)
    assert rows.shape == (4, 126)
    assert rows[1, 5] == rows[1, 7] == 0.5 and rows[0, 5] == 1.0 and rows[3, 2] == 1.0
    assert rows[2].sum() == 0  # tract 1 has no minors


@pytest.mark.parametrize("value", [2.5, -0.5, np.nan, np.inf])
def test_population_risk_refuses_noisy_counts_that_are_not_whole(value):
    """dr.population.risk took BlockMeasurements.noisy of any dtype and cast it to int64: a
    count of 2.5 ran as 2 and -0.5 as 0 (truncated toward zero), NaN as -2**63 (with numpy's
    'invalid value encountered in cast' warning), without a word. Whole numbers held as
    floats are read as before; anything else is refused naming the block and the cell."""
    from population_helpers import measure

    from dprisk.inference.population.measurements import BlockMeasurements
    from dprisk.inference.population.risk import population_risk

    frame = _frame()
    meas = measure(frame, 10.0, seed=1)
    as_floats = BlockMeasurements(meas.geoids, meas.noisy.astype(np.float64), meas.variance)
    np.testing.assert_array_equal(population_risk(frame, as_floats).posterior_true,
                                  population_risk(frame, meas).posterior_true)
    noisy = meas.noisy.astype(np.float64)
    noisy[1, 886] = value
    bad = BlockMeasurements(meas.geoids, noisy, meas.variance)
    with pytest.raises(ValueError, match=f"measurements: noisy count of block "
                                         f"'{meas.geoids[1]}' cell 886 is {value!r}, not an "
                                         "integer"):
        population_risk(frame, bad)


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_a_persons_column_given_twice_is_refused_naming_it(tmp_path, ext):
    """A CSV header '...,cenrace,cenrace' was read by pandas as cenrace and cenrace.1 and the
    first taken without a word (which is the person's?); the Parquet file with two cenrace
    fields was refused as 'not a readable parquet file (AttributeError: 'DataFrame' object
    has no attribute 'dtype')'. Both, read whole or in batches, now name the column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dprisk.inference.population.persons import iter_persons

    frame = _frame()
    path = tmp_path / f"p.{ext}"
    if ext == "csv":
        path.write_text("geoid,hhgq,votingage,hispanic,cenrace,cenrace\n" + "".join(
            f"{g},{h},{v},{x},{c},9\n" for g, h, v, x, c in frame.itertuples(index=False)))
    else:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        pq.write_table(table.append_column("cenrace", pa.array([9, 9])), path)
    message = (f"--persons '{path}': column cenrace appears 2 times \\(a persons file has "
               "each of geoid, hhgq, votingage, hispanic, cenrace once\\)")
    with pytest.raises(ValueError, match=message):
        read_persons(path, name="--persons")
    with pytest.raises(ValueError, match=message):
        list(iter_persons(path, name="--persons", batch_rows=1))


def test_synth_geoids_stay_distinct_past_500_counties(monkeypatch):
    """County k was coded 2k + 1: from k = 500 (about 48 million persons) that is 1001, a
    16-character GEOID cut to 15 in the U15 array, so blocks merged without a word (60
    million persons, seed 1: 1,349,502 blocks drawn, 1,147,115 distinct GEOIDs). Counties of
    one tract of one block or so (TRACT_SIZE 10, COUNTY_TRACTS 1) reach 500 counties at
    20,000 persons: 40,000 persons drew 901 blocks, which had 861 GEOIDs; now 901."""
    monkeypatch.setattr(synth, "TRACT_SIZE", (10, 10))
    monkeypatch.setattr(synth, "COUNTY_TRACTS", (1, 1))
    persons = synth.synthesize(40_000, 1)
    drawn = synth.block_sizes(40_000, np.random.default_rng(1))  # the first draws of seed 1
    assert persons.geoid.nunique() == drawn.size == 901
    assert persons.geoid.str.len().eq(15).all()
    counties = persons.geoid.str.slice(2, 5)
    assert counties.max() == "999" and (counties.str.slice(2).astype(int) % 2 == 1).all()
    sizes = np.sort(persons.groupby("geoid").size().to_numpy())
    np.testing.assert_array_equal(sizes, np.sort(drawn))  # no block took another's persons
